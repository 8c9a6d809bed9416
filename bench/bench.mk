# bench/: benchmarks (see bench/README.md)
