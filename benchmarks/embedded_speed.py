"""Prompt and generation speed of each embedded model, measured through the harness's Backend.

Run by hand (not a test; timings are noisy): .venv/bin/python benchmarks/embedded_speed.py [NAME ...]
The figures go into `harness models` (weights.LocalModel.speed) and the README.
"""

import secrets
import sys
import time

from harness.models.backends import open_model
from harness.models.weights import MODELS

VOCABULARY = ("budget hotel flight order number meeting summary answer question river city "
              "window garden kitchen doctor ticket server project decision morning").split()


def measure(name: str) -> None:
    backend = open_model(name)
    backend.create(max_tokens=1, messages=[{"role": "user", "content": "warm up"}])

    # Prompt processing: ordinary words in a fresh random order, so nothing comes from the prompt cache.
    words = " ".join(secrets.choice(VOCABULARY) for _ in range(800))
    started = time.monotonic()
    response = backend.create(max_tokens=1, messages=[{"role": "user", "content": words}])
    seconds = time.monotonic() - started
    prompt_tokens = response["usage"]["input_tokens"]
    print(f"{name}: prompt     {prompt_tokens} tokens in {seconds:.2f} s = {prompt_tokens / seconds:.0f} tokens/s")

    # Generation: a short prompt and a long answer; ignore_eos makes every run generate the same count.
    backend.sampling = {**backend.sampling, "ignore_eos": True}
    started = time.monotonic()
    response = backend.create(max_tokens=256, messages=[{"role": "user", "content": "Tell me a long story."}])
    seconds = time.monotonic() - started
    output_tokens = response["usage"]["output_tokens"]
    print(f"{name}: generation {output_tokens} tokens in {seconds:.2f} s = {output_tokens / seconds:.0f} tokens/s")


if __name__ == "__main__":
    for name in sys.argv[1:] or list(MODELS):
        measure(name)
