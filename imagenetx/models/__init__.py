"""Models: specs (``timm:``, ``torchvision:``, ``checkpoint:``), batched
inference, and prediction files."""
