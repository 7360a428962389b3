"""`harness import FORMAT FILE`: public benchmarks and agent logs converted into scenario files."""
