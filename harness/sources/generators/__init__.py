"""`harness generate`: seeded synthetic scenarios built for statistical power."""
