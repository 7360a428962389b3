"""What a run starts from: user files read with located errors (`files`), scenario files and the
probes they imply (`scenario`), eval files (`evalfile`), and the programs that write scenarios:
generators (`generators`), importers of benchmarks and agent logs (`importers`), both through one
validated writer (`writer`)."""
