"""The language: parsing the text, lowering it to equations, the libraries' dialects."""
