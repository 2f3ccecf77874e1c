"""Earlier formats of the kept index, made from one of today's (`gateway.knowledge.schema`)."""

# Up to format 6 the FTS5 table kept the passages' terms itself, in no table of their own.
OWN_TERMS = (
    "CREATE TABLE kept(id INTEGER PRIMARY KEY, heading TEXT, body TEXT)",
    "INSERT INTO kept SELECT id, heading, body FROM passage_terms",
    "DROP TABLE terms",
    "DROP TABLE passage_terms",
    "CREATE VIRTUAL TABLE terms USING fts5(heading, body, "
    "tokenize='unicode61 remove_diacritics 0')",
    "INSERT INTO terms(rowid, heading, body) SELECT id, heading, body FROM kept",
    "DROP TABLE kept",
)
