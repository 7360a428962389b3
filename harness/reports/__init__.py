"""Reports of run folders: the tables and plots of a run (`tables`, `plots`, listed in
`sections.TABLES`), paired comparisons (`comparisons`), every format (`formats`: text, markdown,
CSV, HTML with the fact explorer of `explorer`) and the gate's outputs (`gate`). Reads `records`
and `analysis`; imports no runner, agent or model."""
