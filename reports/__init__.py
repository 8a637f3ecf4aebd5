"""Reports of kchaos runs: report.html, junit.xml, summary.json and the console summary."""
