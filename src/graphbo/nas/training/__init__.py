"""PyTorch realisation and training of architectures, and the NAS objectives built on it."""
