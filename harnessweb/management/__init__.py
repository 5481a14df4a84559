"""Management commands of harnessweb."""
