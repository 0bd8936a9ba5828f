"""ImageNet-X (Idrissi et al., ICLR 2023): 16 human-annotated factors of
variation on ImageNet images."""
