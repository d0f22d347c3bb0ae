"""The scalekit command line (installed as the ``scalekit_cli`` package)."""
