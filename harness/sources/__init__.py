"""Where scenarios come from: importers of agent logs and benchmarks, generators of chats and coding
sessions, the starter of `harness init`, and the writer they share. What they write is read back
through `harness.inputs`, like a scenario written by hand."""
