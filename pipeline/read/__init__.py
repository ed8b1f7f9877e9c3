"""Reading stores: tables, plots, reports, scorecards, catalogues and questions across stores."""
