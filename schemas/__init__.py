"""Row models, Arrow schemas and validated configs. Imports nothing of ours."""
