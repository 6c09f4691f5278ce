"""`tritonize audit`: static rules over Triton source, and compile checks for a CUDA target without a GPU."""
