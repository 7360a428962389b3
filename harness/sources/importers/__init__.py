"""`harness import FORMAT FILE...`: public benchmarks and agent logs converted into scenario files."""

# The agent-log formats (`agent_logs.FORMATS` reads them); named here so the command line can list
# them without importing the readers.
AGENT_FORMATS = ("claude-code", "codex", "swe-agent", "mini-swe-agent", "openai")
