"""What an answer is made of besides the model's words: pure functions over text, no I/O."""
