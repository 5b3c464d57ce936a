"""The analysis layer: aggregation (ratios, variation), plots, the HTML report and the
reproduction page. Reads stores; never imports the run layer."""
