"""The model server: candidate generators (backends), the generate -> verify -> repair loop, the HTTP API."""
