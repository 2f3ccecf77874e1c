"""What an answer is made of besides the model's words, and what it means to the script
that posts it: pure functions over text, no I/O.

    citations  the `[n]` markers an answer cites: kept when passage n was sent, else
               removed and counted; a stream's text rewritten as it arrives
    handoff    the reply that hands off (`[handoff]` first, or the prompt's not-covered
               sentence alone), and a stream's first words held until that is decided
    urls       an article's public URL: its own, else `articles.url_base` joined with its
               path under its folder; never guessed
    settle     a Result from the engine -> the same Result with `action`, `handoff`,
               `citations`; the not-covered handoff no model was asked for
    stream     the text a streaming customer sees, by the same rules as `settle`
    phrases    every fixed sentence a customer may read (the handoff message, the offline
               answer's words), in which languages, and which one is said
"""
