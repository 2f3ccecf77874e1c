"""Classification: a provider's reply or a transport exception becomes a Failure (errors, by
the rules), and a server-directed wait is read (retry_after).

Nothing is imported here: an answered question never loads the classifier.
"""
