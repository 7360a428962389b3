"""The formats a run reads: user files read with located errors (`files`), scenario files and the
probes they imply (`scenario`, `probes`), and eval files (`evalfile`). The programs that write
scenarios (importers, generators, the starter) are `harness.sources`."""
