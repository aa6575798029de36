"""The ``genkit-sessions`` command line."""
