"""Model converters used to run the same weights on other engines."""
