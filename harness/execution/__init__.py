"""Running an eval: the eval bound to its strategies (`evals`), the agent under test (`agent`; the
interactive one in `chat`), the cases (`cases`) and how one is played, probed and scored
(`runner`), the executors that run them directly or in batch waves (`executors`, `waves`), what a
run records about itself (`provenance`), the optional judge (`judge`), and `harness plan`'s
rehearsal of it all (`rehearsal`)."""
