"""The model layer: the Messages API client interface (`client`), the backends behind it
(`backends`: the embedded llama.cpp server of `local`, Claude, any Anthropic-compatible URL), the
response cache (`cache`) and the Message Batches API (`batch`). Imports nothing else of the harness."""
