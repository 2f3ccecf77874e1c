"""The help centre behind every question: loading, passages, the index, the one ranker,
and the selection within a token budget.

    files     finding the articles under the paths given: symlinks followed (loops
              detected), caps on one article's size and on the whole set's
    load      one file -> an Article (Markdown, plain text, HTML reduced to text)
    htmltext  an HTML page reduced to text, read by html.parser or (a large set) lxml
    terms     words as the ranker sees them (content words, lightly stemmed)
    passages  an Article cut into passages at its headings
    index     the Index seam (a Protocol) and MemoryIndex, for a set read this run
    store     SqliteIndex: the index kept between runs in the user cache dir
    cut       its first cut: the articles of a large set the ranker scores, by FTS5's BM25
    reading   a refresh's files to the rows stored, in a pool of processes for many
    rank      the one ranker (BM25 + coverage), for the prompt and the offline deployment
    select    every article when they fit the budget, else the best passages, grouped
    relevance whether the help centre covers a question: a 0..1 figure and its floor

Public API (what the CLI and the benchmarks call):

    load.load_articles(paths) -> (articles, warnings)      every article, read now
    index.MemoryIndex(articles)                            an Index of those
    rank.rank(question, index) -> [Ranked(key, score, coverage)], best first
    select.select(question, index, budget) -> Selection    budget None: everything
    select.best_within(question, index, budget) -> Selection
    relevance.covers(question, sources, index, floor) -> bool   False: hand it off

Nothing here imports sqlite3 unless an index is kept on disk, nor html.parser unless an
HTML article is read, nor lxml and a process pool unless many HTML pages are indexed.
"""
