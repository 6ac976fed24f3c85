"""Tables, plots and HTML reports."""
