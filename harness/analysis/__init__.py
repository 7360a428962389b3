"""Analysis of run folders: rates with intervals that count each fact once (`stats`, `rates`),
paired comparisons of two variants on the same facts (`compare`), and the gate's verdict on a
candidate against a baseline (`gate`). Reads `records`; imports no runner, agent or model."""
