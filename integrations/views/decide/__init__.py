"""What to do about what ``read`` shows: one reconcile (``reconcile.actions``), the status fold
(``rollup``), the Job controller's verdict, kept queue positions, stranded nodes. Pure."""
