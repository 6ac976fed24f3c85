"""Real English word frequencies for 000's Trending Topics tweets (the ``wordfreq``
package: frequencies from Twitter, Wikipedia, subtitles and more), exported into the
topology's conf at submit time as ``bench.words`` = [[word, frequency], ...]; the
topology draws rarer words from a Zipf tail over the remaining probability mass."""

from __future__ import annotations

from streamband.errors import PreconditionError


def english_words(n: int = 5000) -> list[list[object]]:
    """The ``n`` most frequent English words and their frequencies (sum < 1)."""
    try:
        import wordfreq
    except ImportError:
        raise PreconditionError("Trending Topics needs the wordfreq package "
                                "(pip install wordfreq)") from None
    words = wordfreq.top_n_list("en", n)
    return [[w, float(wordfreq.word_frequency(w, "en"))] for w in words]
