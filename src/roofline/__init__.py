"""roofline: where a PyTorch model's time goes, and how far each op is from the hardware's limit."""

__version__ = "0.1.0"
