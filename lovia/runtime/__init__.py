"""The run engine: ``RunLoop`` and the phase modules it drives."""
