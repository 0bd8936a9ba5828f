"""Presentation: text tables, plotly figures and the HTML report."""
