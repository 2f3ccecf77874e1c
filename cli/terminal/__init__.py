"""What the user sees: diagnostics on stderr (diag), the answer on stdout (output), the
attempts table (render), progress (batch_view, indexing), and the scrubbed streams.
"""
