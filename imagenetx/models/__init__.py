"""Models: specs (``timm:``, ``torchvision:``, ``checkpoint:``), batched
inference, its shards under torchrun, and prediction files."""
