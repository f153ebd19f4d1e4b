"""The graph's schema: versioned, checksummed migrations and a start-up verification.

Each migration is literal Cypher: DDL, and the statements that fill new columns from the old
ones (backfills, no parameters). Applying one runs its statements and records
``(version, name, checksum)`` in the ``SchemaMigration`` table, in one transaction. At start-up
every recorded migration must match the code's (same version, same checksum, or a checksum the
migration lists as ``earlier``: it then runs again), pending ones are applied in order, and the
live tables are compared with ``EXPECTED``; any difference stops the start with
``SchemaMismatch`` instead of letting the first recall fail an hour later.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

# Stored decimals: exact, 18 fractional digits, range [0, 1] enforced on the way in.
DECIMAL = "DECIMAL(19, 18)"


@dataclass(frozen=True)
class Migration:
    """One schema step: a version, a human name and the DDL statements it runs.

    ``earlier`` holds the checksums of statements this migration had in an earlier doxa,
    which a store may have recorded, and which this version accepts: each is named with why
    the store it left is one this code reads. Start-up runs the migration's statements again
    on such a store, in one transaction with its record made anew (this checksum), so it ends
    as this version's migration leaves it: statements that may be run twice, as those that
    clear what start-up computes again.
    """

    version: int
    name: str
    statements: tuple[str, ...]
    earlier: tuple[str, ...] = ()

    @property
    def checksum(self) -> str:
        """sha256 of the statements; an applied migration whose text changed is refused."""
        digest = hashlib.sha256()
        for statement in self.statements:
            digest.update(statement.strip().encode())
            digest.update(b"\n;\n")
        return digest.hexdigest()


MIGRATION_TABLE = "SchemaMigration"

#: Creates the history table itself; run before any migration on a fresh store.
HISTORY_DDL = (
    f"CREATE NODE TABLE {MIGRATION_TABLE}(version INT64, name STRING, checksum STRING,"
    " applied_at TIMESTAMP, PRIMARY KEY(version))"
)

#: A month's name or an ordinal day, the words migration 20 reads again beside a digit (a
#: regular expression RE2 and ``re`` read alike; imports of older files use it too).
DAYS_NAMED = r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|[0-9](?:st|nd|rd|th)\b"
#: Being somewhere, told in the present ("I'm in Rome", "we are away"): beside ``DAYS_NAMED``,
#: the words migration 21 reads again (a plan: its day is ahead).
BEING_SOMEWHERE = (
    r"\b(?:am|are|is|m|re|s)\s+"
    r"(?:in|at|away|off|out|visiting|staying|travell?ing|flying|driving|working|hosting)\b"
)
#: A joiner of a range's two ends ("to", "until", "through", a dash).
_JOINER = r"\s*(?:-|" + "\u2013" + r"|\bto\b|\buntil\b|\btill\b|\bthrough\b|\bthru\b)\s*"
_MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
_WEEKDAY = r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)day"
#: A day or month (a number, a month's name, an ISO 8601 day) joined to another by a range's
#: joiner, a weekday and "the" allowed before the second ("28 May to 3 June", "May 28 -
#: June 3", "2024-05-01 to 2024-05-03", "21 May to Friday 24 May"): beside ``DAYS_NAMED`` or
#: an ISO 8601 day, the texts migration 22 reads again.
DAYS_JOINED = (
    rf"(?:\b(?:{_MONTHS})[a-z]*\.?|\b[0-9]{{1,2}}(?:st|nd|rd|th)?|[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}})"
    rf"{_JOINER}(?:{_WEEKDAY},?\s+)?(?:the\s+)?(?:[0-9]|\b(?:{_MONTHS}))"
)
ISO_DAY = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
#: Two weekdays joined as a range ("from Monday to Wednesday", "between Monday and Friday"):
#: migration 22 reads such a text again.
WEEKDAYS_JOINED = rf"{_WEEKDAY}(?:{_JOINER}|\s+and\s+){_WEEKDAY}\b"
#: A plan told in the present ("my flight leaves", "the launch is on", "I'm in Rome"): beside
#: ``WEEKDAY``, the texts migration 24 reads again (the weekday named is one to come).
PLAN_TOLD = (
    r"\b(?:leaves|departs|starts|begins|opens|arrives|lands|takes\s+place|kicks\s+off)\b"
    r"|\b(?:am|are|is|m|re|s)\s+(?:on|due|scheduled|booked|set|planned|in|at|away|off|out"
    r"|visiting|staying|travell?ing|flying|driving|working|hosting)\b"
)
#: A plan told in the present by a word that looks past ("is booked", "is planned"): beside
#: ``DAYS_NAMED`` and a digit, the texts migration 24 reads again (such a day is ahead).
PLAN_BOOKED = r"\b(?:am|are|is|m|re|s)\s+(?:booked|scheduled|planned)\b"
#: A plan moved to a new day, told in the past tense ("was moved to 18 December", "is
#: postponed until Friday"): beside ``PLAN_TOLD``, the words migration 25 reads again.
PLAN_MOVED = (
    r"\b(?:was|were|is|are|has\s+been|have\s+been|got|been|be)\s+(?:moved|rescheduled"
    r"|postponed|pushed\s+back|delayed|brought\s+forward|put\s+off)\s+(?:to|until|till|for)\b"
    r"|\b(?:rescheduled|postponed)\s+(?:to|until|till|for)\b"
)
#: Verbs that tell of a plan in the present ("Sam turns 40 on Friday", "dinner is 7pm on
#: Saturday"): beside ``WEEKDAY``, the words migration 25 reads again.
PLAN_VERBS = (
    r"\b(?:turns|moves|returns|ends|closes|finishes|graduates|retires|flies)\b"
    # A time said to be when it is: "dinner is 7pm on Saturday".
    r"|\b(?:is|are)\s+[0-9]"
    # "I have a dentist appointment on Friday", "the plumber comes on Friday", "there is a
    # fire drill on Friday", "Tom is back on Friday", "we meet on Friday", "booked for".
    r"|\b(?:have|has)\s+(?:a|an|my|our|his|her|their)\b|\bthere\s+(?:is|are)\s+(?:a|an)\b"
    r"|\b(?:comes|gets\s+married|meets|visits|(?:is|are|comes|come)\s+back)\b"
    r"|\b(?:we|they|you|i)\s+meet\b|\b(?:booked|scheduled|planned)\s+(?:for|on)\b"
)
#: A weekday's name.
WEEKDAY = _WEEKDAY
#: A count the event time reads since migration 27 ("several weeks ago"): migration 27 reads
#: such a text again.
SEVERAL = r"\bseveral\b"
#: An ordinal day ("the 20th"): beside ``WEEKDAY``, ``END_OF_THE_MONTH`` and ``BY_DAY``, the
#: texts migration 29 reads again ("from the 20th to the 23rd" is a span).
ORDINAL_DAY = r"[0-9](?:st|nd|rd|th)\b"
#: "the end of the month", which the event time reads since migration 29.
END_OF_THE_MONTH = r"\bend\s+of\s+the\s+month\b"
#: A deadline of a day or a month's end ("by 15 December", "by December 15", "by the end of
#: March", "by 2026-12-15"), which the event time reads since migration 29 (after "by" it was
#: dropped): beside ``ORDINAL_DAY``, the texts migration 29 reads again.
BY_DAY = rf"\bby\s+(?:(?:the\s+)?end\s+of\s+)?(?:[0-9]|\b(?:{_MONTHS}))"
#: A plan that slipped, slid, was bumped or extended ("the launch slipped to March 17"), read
#: as one moved to a day ahead since migration 29 (it was the day gone): beside ``BY_DAY``,
#: the texts migration 29 reads again.
SLIPPED = r"\b(?:slipped|slips|slid|bumped|extended)\b"
#: "is" contracted after a name or a noun before a verb of coming or going ("Sam's coming on
#: 20 March"), read as "Sam is coming" since migration 29 (it was no plan: the March gone):
#: beside ``SLIPPED``, the texts migration 29 reads again. Any mark before the "s" (no quote
#: in the pattern, which sits in a quoted Cypher string).
CONTRACTED_COMING = (
    r"[^\s\w]s\s+(?:coming|arriving|leaving|going|heading|visiting|flying|driving|staying"
    r"|returning|moving)\b"
)
#: "until", "till" or "extended" ("I'm in Berlin until Friday", "her contract was extended to
#: June"), after which a time to come is read since migration 30 (it was dropped): the texts
#: migration 30 reads again.
UNTIL = r"\b(?:until|till|til|extended)\b"
#: A year said relative to this one ("in May last year" was May of this year, beside the whole
#: year gone): beside ``UNTIL``, the texts migration 30 reads again.
RELATIVE_YEAR = r"\b(?:last|next|this)\s+year\b"
#: An errand opening a sentence with its verb ("Call the plumber on Monday" was the Monday
#: gone): beside ``UNTIL``, the texts migration 30 reads again.
ERRAND = (
    r"(?:^|[.!?;\n])\W*(?:(?:note|todo|to-do|to\s+do|tasks?)\s*:\s*)?(?:please\s+)?"
    r"(?:call|phone|email|e-mail|buy|pay|send|renew|submit"
    r"|cancel|bring|collect|confirm|pick\s+up|drop\s+off|follow\s+up\s+with)\b"
)
#: An errand opening a sentence with a verb that is also a noun, told with its object's
#: determiner ("Order the cake by Friday" was no time, "Book a table on Friday" the Friday
#: gone): the texts migration 32 reads again.
ERRAND_OBJECT = (
    r"(?:^|[.!?;\n])\W*(?:(?:note|todo|to-do|to\s+do|tasks?)\s*:\s*)?(?:please\s+)?"
    r"(?:book|order|reserve|return|schedule|get|fix|file|sign|clean|print|finish)\s+"
    r"(?:a|an|the|my|our|his|her|their|your|some|this|that|these|those|it|them)\b"
)
#: What should be done ("We should ship on Friday" was the Friday gone): beside ``UNTIL``,
#: the texts migration 30 reads again.
SHOULD = r"\bshould\b"
#: Words of time beside code (a backtick): migration 22 reads such a text again (code tells
#: no time of the event).
TIME_WORDS = (
    r"[0-9]|\b(?:yesterday|today|tonight|tomorrow|ago|since|last|next|week|weekend|month"
    rf"|year|morning|evening|night|{_MONTHS})|{_WEEKDAY}"
)


def _predicate_named(column: str) -> str:
    """Cypher naming a predicate as ``drafts.predicate_key`` does, for the words Cypher can
    fold: lower case, its words joined by ``_`` (whitespace, ``_`` and ``-`` split them)."""
    spaced = rf"trim(regexp_replace(lower({column}), '[\\s_-]+', ' ', 'g'))"
    return f"regexp_replace({spaced}, ' ', '_', 'g')"


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "typed agent memory",
        (
            "CREATE NODE TABLE Agent(name STRING, PRIMARY KEY(name))",
            "CREATE NODE TABLE Topic(name STRING, kind STRING, summary STRING,"
            " summary_at TIMESTAMP, PRIMARY KEY(name))",
            "CREATE NODE TABLE Episode(id STRING, session_id STRING, started_at TIMESTAMP,"
            " summary STRING, PRIMARY KEY(id))",
            "CREATE NODE TABLE Observation(id STRING, seq INT64, text STRING, text_key STRING,"
            " observed_at TIMESTAMP, recorded_at TIMESTAMP, confidence DECIMAL(19, 18),"
            " source STRING, kind STRING, subject STRING, predicate STRING, object STRING,"
            " valid_from TIMESTAMP, valid_until TIMESTAMP, retracted_at TIMESTAMP,"
            " hits INT64, impressions INT64, PRIMARY KEY(id))",
            "CREATE NODE TABLE Belief(id STRING, since TIMESTAMP, PRIMARY KEY(id))",
            "CREATE NODE TABLE Recall(id STRING, query STRING, agent STRING, at TIMESTAMP,"
            " judged_at TIMESTAMP, query_vector FLOAT[], PRIMARY KEY(id))",
            "CREATE REL TABLE MENTIONS(FROM Observation TO Topic)",
            "CREATE REL TABLE HOLDS(FROM Agent TO Belief)",
            "CREATE REL TABLE `OF`(FROM Belief TO Observation)",
            "CREATE REL TABLE SUPPORTS(FROM Observation TO Belief, weight DECIMAL(19, 18))",
            "CREATE REL TABLE CONTRADICTS(FROM Observation TO Observation, at TIMESTAMP)",
            "CREATE REL TABLE SUPERSEDES(FROM Observation TO Observation, at TIMESTAMP)",
            "CREATE REL TABLE `FROM`(FROM Observation TO Episode)",
            "CREATE REL TABLE RETURNED(FROM Recall TO Observation, rank INT64, score DOUBLE,"
            " judgement STRING)",
            "CREATE REL TABLE CO_ACTIVATED(FROM Observation TO Observation, count INT64)",
        ),
    ),
    Migration(
        2,
        "predicate cardinality, beliefs of their own, stated validity",
        (
            # A predicate's cardinality ("one": a newer object supersedes; "many": objects
            # accumulate), recorded when a fact first uses it.
            "CREATE NODE TABLE Predicate(name STRING, cardinality STRING, since TIMESTAMP,"
            " PRIMARY KEY(name))",
            # Each believer's own confidence, and a belief withdrawn by its agent alone.
            "ALTER TABLE Belief ADD confidence DECIMAL(19, 18)",
            "ALTER TABLE Belief ADD retracted_at TIMESTAMP",
            # The end a fact was given when remembered (valid_until is its end as known now,
            # moved by supersession), so the memory can say what it held at any record time.
            "ALTER TABLE Observation ADD stated_until TIMESTAMP",
            "MATCH (b:Belief)-[:`OF`]->(o:Observation) SET b.confidence = o.confidence",
            # Backfill (an approximation): an end earlier than every superseder's start was
            # stated; an end equal to one may have been set by the supersession, and is not.
            "MATCH (o:Observation) WHERE o.valid_until IS NOT NULL"
            " OPTIONAL MATCH (:Observation)-[s:SUPERSEDES]->(o)"
            " WITH o, min(s.at) AS first WHERE first IS NULL OR o.valid_until < first"
            " SET o.stated_until = o.valid_until",
        ),
    ),
    Migration(
        3,
        "event times",
        (
            # When what an observation tells of happened, read from its words at remember
            # (event_time.stored: JSON, "[]" for none). NULL: not read yet; start-up reads the
            # observations stored before this migration and fills it.
            "ALTER TABLE Observation ADD event_times STRING",
        ),
    ),
    Migration(
        4,
        "features of returned results",
        (
            # What the learned ranker saw of each returned result (JSON: feature -> value),
            # so a judged recall is a training example (learning.FEATURES).
            "ALTER TABLE RETURNED ADD features STRING",
        ),
    ),
    Migration(
        5,
        "records",
        (
            # A record's type, and one node per distinct field value (shared by every record
            # holding it): key "<field>|<class>|<canonical>" (records.comparable), so a
            # where filter is one primary-key lookup. The edge keeps this record's field:
            # its position, name as given, kind (integer, decimal, ...) and value as text.
            "CREATE NODE TABLE RecordType(name STRING, PRIMARY KEY(name))",
            "CREATE NODE TABLE FieldValue(key STRING, field STRING, kind STRING,"
            " value STRING, PRIMARY KEY(key))",
            "CREATE REL TABLE IS_A(FROM Observation TO RecordType)",
            "CREATE REL TABLE HAS_FIELD(FROM Observation TO FieldValue, position INT64,"
            " name STRING, kind STRING, value STRING)",
        ),
    ),
    Migration(
        6,
        "features kept on the recall",
        (
            # What the ranker saw moves from each RETURNED edge to its recall, as
            # "<rank> <features JSON>" per result. Text on a relationship that feedback
            # updates filled Kùzu's page cache at a checkpoint: 256 MB after ~1,500 judged
            # recalls (bench/soak.py); a recall node is written once.
            "ALTER TABLE Recall ADD features STRING[]",
            "MATCH (r:Recall)-[x:RETURNED]->() WHERE x.features IS NOT NULL"
            " WITH r, collect(CAST(x.rank AS STRING) + ' ' + x.features) AS kept"
            " SET r.features = kept",
            "ALTER TABLE RETURNED DROP features",
        ),
    ),
    Migration(
        7,
        "co-activations as nodes",
        (
            # How often two observations were accepted together, counted on a node keyed
            # "<a> <b>" (a < b) instead of a CO_ACTIVATED relationship updated in place: a
            # soak of 20,000 judged recalls left that table's forward and backward lists
            # disagreeing inside Kùzu 0.11.3 (one edge seen from one end only), and every
            # later feedback touching it failed. A node table has no such lists. Pairs seen
            # twice from the damaged side keep their largest count.
            "CREATE NODE TABLE CoActivation(pair STRING, a STRING, b STRING, count INT64,"
            " PRIMARY KEY(pair))",
            "MATCH (a:Observation)-[c:CO_ACTIVATED]->(b:Observation)"
            " WITH a.id AS x, b.id AS y, max(c.count) AS n"
            " CREATE (:CoActivation {pair: x + ' ' + y, a: x, b: y, count: n})",
            "DROP TABLE CO_ACTIVATED",
        ),
    ),
    Migration(
        8,
        "query vectors as bytes",
        (
            # A judged recall's query vector as its float32 bytes in base64 text. Kùzu
            # 0.11.3 compresses the floats of a FLOAT[] list column, and a list written
            # after a checkpoint read back as zeros once the next checkpoint ran, when the
            # lists before were mostly zeros (the hash embedder's vectors): the feedback
            # those queries gave was gone after a restart. query_vector keeps the vectors
            # judged before; start-up embeds again any that came back as zeros.
            "ALTER TABLE Recall ADD query_embedding STRING",
        ),
    ),
    Migration(
        9,
        "the embedder of judged queries",
        (
            # Which embedder (its fingerprint) embedded a judged query: after the model
            # changes, a vector of the old one is no likeness to compare (or not even of the
            # same size), so start-up embeds the query again with the new one.
            "ALTER TABLE Recall ADD query_embedder STRING",
        ),
    ),
    Migration(
        10,
        "the embedder that ranked each recall",
        (
            # The ranker learns from the components a recall's results had when it answered,
            # and the vector component is the embedder's: after the model changes, recalls
            # ranked by the old one are no examples of the new one's (``training_examples``).
            # Start-up stamps the recalls recorded before (``stamp_recalls``).
            "ALTER TABLE Recall ADD embedder STRING",
        ),
    ),
    Migration(
        11,
        "event times read again",
        (
            # The reading of event times learned more English ("last Fri", "two weekends
            # ago", "on the 15th", "over the weekend", holidays): start-up reads every
            # observation's words again, as it did for those stored before migration 3.
            "MATCH (o:Observation) SET o.event_times = NULL",
        ),
    ),
    Migration(
        12,
        "records' event times",
        (
            # A record's fields were read as a story ("name=Yesterday" happened the day
            # before it was told); start-up reads again only a text given with the record.
            "MATCH (o:Observation)-[:IS_A]->(:RecordType) SET o.event_times = NULL",
        ),
    ),
    Migration(
        13,
        "records' duplicate keys",
        (
            # A record's duplicate key was read from the record in words, where 176 and
            # "176" are alike (``drafts.memory_key``); start-up computes it again once.
            "MATCH (o:Observation)-[:IS_A]->(:RecordType) SET o.text_key = NULL",
        ),
    ),
    Migration(
        14,
        "judged queries apart",
        (
            # A judged recall's query vector, written once in a node of its own. Kùzu 0.11.3
            # garbles a STRING column's values set by SET on rows that a checkpoint had
            # written without one (Recall.query_embedding, set when a recall was judged):
            # after the next checkpoints each row read another row's vector, or text 193
            # vectors long, and reading the column could crash the process. Vectors inserted
            # whole are not touched. The vectors kept until now cannot be trusted: start-up
            # embeds every judged query again from its words. The recall's old columns stay,
            # unread (``RETIRED``): a checkpoint after dropping them crashed Kùzu.
            "CREATE NODE TABLE JudgedQuery(recall STRING, vector STRING, embedder STRING,"
            " PRIMARY KEY(recall))",
        ),
    ),
    Migration(
        15,
        "entity summaries apart",
        (
            # An entity's summary, in a node of its own replaced whole (deleted and inserted)
            # instead of set again and again on its Topic node, where Kùzu 0.11.3 garbles
            # STRING values as it did judged queries' vectors (migration 14). Topic.summary
            # and summary_at stay, unread (``RETIRED``); the start after this writes every
            # entity's summary anew.
            "CREATE NODE TABLE Summary(topic STRING, text STRING, at TIMESTAMP,"
            " PRIMARY KEY(topic))",
        ),
    ),
    Migration(
        16,
        "supersessions' record time",
        (
            # When a supersession was recorded: an agent sharing another's newer fact, a
            # forget and a start's mending link facts recorded long before, and a view at an
            # earlier record time took such a link for as old as its newer fact. Links made
            # before keep NULL: they were recorded with their newer fact.
            "ALTER TABLE SUPERSEDES ADD known TIMESTAMP",
        ),
    ),
    Migration(
        17,
        "supersessions an agent's forget undid",
        (
            # When a link stopped ending its older fact while its newer one stayed: the agent
            # who held the older fact withdrew its belief in the newer one, which others still
            # hold. Views at an earlier record time still see the link.
            "ALTER TABLE SUPERSEDES ADD dropped TIMESTAMP",
        ),
    ),
    Migration(
        18,
        "the valid end of a belief a later fact withdrew",
        (
            # An agent's later fact withdraws its belief in an older fact others still hold
            # (it cannot end theirs): the belief held, for that agent, until the later fact
            # began. NULL: withdrawn outright (a forget), or before this migration.
            "ALTER TABLE Belief ADD held_until TIMESTAMP",
        ),
    ),
    Migration(
        19,
        "when an agent forgot a belief a later fact had withdrawn",
        (
            # The belief held, for its agent, until its later fact began; the agent then
            # forgot it, so it held at no time from then on. Views at an earlier record time
            # still see it held until then.
            "ALTER TABLE Belief ADD forgotten_at TIMESTAMP",
        ),
    ),
    Migration(
        20,
        "event times read again: days' years and ranges",
        (
            # A weekday said with a day chooses its year ("Tuesday 14 May"), days of one
            # month are a span ("from 3 to 10 June"), a plan told in the present is ahead
            # ("leaves on 3 June"), and a fact's own times choose the year of a date in its
            # words ("from 11 June"): start-up reads again the words these can change, a
            # text holding a digit and a month's name or an ordinal day, and no other: a
            # reading again knows only the UTC offset ("tomorrow" said at 23:30 -08:00 is
            # read a day later), so what no new rule changes is left as it was read. (The
            # pattern's backslashes doubled: a Cypher string literal reads them as escapes.)
            "MATCH (o:Observation) WHERE regexp_matches(o.text, '[0-9]') AND regexp_matches("
            f"o.text, '(?i){DAYS_NAMED}') SET o.event_times = NULL".replace("\\", "\\\\"),
        ),
        # 400cd2b's statement cleared the event times of every fact and of every text holding
        # a digit ("... WHERE o.kind = 'fact' OR regexp_matches(o.text, '[0-9]') SET
        # o.event_times = NULL"): more texts than this one, which start-up read again (a
        # NULL is always read from the words); run again, this one reads its own with this
        # version's reading.
        earlier=("4a9a6ba2955097ac49db2dad4989d08795ecd961b4460a3161b4d14cb3bf4308",),
    ),
    Migration(
        21,
        "event times read again: being somewhere, told in the present",
        (
            # "I'm in Rome from 3 to 10 June", said in May, is a plan: its days are ahead,
            # not in the past year. Read again as migration 20 reads, only where these words
            # stand beside a day named.
            "MATCH (o:Observation) WHERE regexp_matches(o.text, '[0-9]') AND regexp_matches("
            f"o.text, '(?i){DAYS_NAMED}') AND regexp_matches(o.text, '(?i){BEING_SOMEWHERE}')"
            " SET o.event_times = NULL".replace("\\", "\\\\"),
        ),
    ),
    Migration(
        22,
        "event times read again: ranges with no from, of weekdays, and code",
        (
            # "28 May to 3 June" (no "from" before it) and "from Monday to Wednesday" are
            # spans, and code tells no time: read again, as migration 20 reads, the texts
            # that join a day or month to another beside a day named (or an ISO 8601 day),
            # those joining two weekdays, and those holding a backtick and a word of time;
            # only those, as a reading again knows only the UTC offset.
            f"MATCH (o:Observation) WHERE (regexp_matches(o.text, '(?i){DAYS_JOINED}')"
            f" AND (regexp_matches(o.text, '(?i){DAYS_NAMED}')"
            f" OR regexp_matches(o.text, '{ISO_DAY}')))"
            f" OR regexp_matches(o.text, '(?i){WEEKDAYS_JOINED}')"
            f" OR (o.text CONTAINS '`' AND regexp_matches(o.text, '(?i){TIME_WORDS}'))"
            " SET o.event_times = NULL".replace("\\", "\\\\"),
        ),
    ),
    Migration(
        23,
        "the cardinality of predicates used before it was recorded",
        (
            # Before migration 2 every predicate was single-valued: a newer object superseded
            # the older ("likes hiking" ended "likes jazz"). Migration 2 recorded no predicate,
            # so those predicates took the configured cardinality at their next use ("likes":
            # many) and accepted any cardinality a fact gave, beside a history superseded as
            # "one". Every predicate facts use with no Predicate node is recorded "one", since
            # its first fact was recorded. (Named as remember names it; Cypher folds case as
            # ``lower`` does, so a name that differs only by ``casefold`` or NFC is two here.)
            "MATCH (o:Observation) WHERE o.predicate IS NOT NULL"
            f" WITH {_predicate_named('o.predicate')} AS name, min(o.recorded_at) AS first"
            f" OPTIONAL MATCH (p:Predicate) WHERE {_predicate_named('p.name')} = name"
            " WITH name, first, count(p) AS known WHERE known = 0 AND name <> ''"
            " CREATE (:Predicate {name: name, cardinality: 'one', since: first})",
        ),
    ),
    Migration(
        24,
        "event times read again: weekdays of plans told in the present",
        (
            # "My flight leaves on Friday", "I'm in Rome from Monday to Wednesday" and "the
            # trip is booked on 3 June" tell of days to come (they were read as days gone).
            # Read again, as migration 20 reads, the texts naming a weekday beside such
            # words, and those naming a day beside "is booked", "scheduled" or "planned".
            f"MATCH (o:Observation) WHERE (regexp_matches(o.text, '(?i){WEEKDAY}')"
            f" AND regexp_matches(o.text, '(?i){PLAN_TOLD}'))"
            " OR (regexp_matches(o.text, '[0-9]')"
            f" AND regexp_matches(o.text, '(?i){DAYS_NAMED}')"
            f" AND regexp_matches(o.text, '(?i){PLAN_BOOKED}'))"
            " SET o.event_times = NULL".replace("\\", "\\\\"),
        ),
    ),
    Migration(
        25,
        "event times read again: plans told of anyone, plans moved, days told without a cue",
        (
            # "Sam is flying to Lisbon on Tuesday", "the user is in Rome from 10 to 14
            # December" (only "I'm", "we're", "he's"… were plans), "the offsite was moved to
            # 18 December" (read as past tense), "Sam turns 40 on 9 December", "the job starts
            # on the 15th", "Mia moves to Geneva on 3 January" (said in December) tell of days
            # to come, and "the deadline is 15 December" was no day at all. Read again the
            # texts holding a digit beside a day named, and those naming a weekday beside
            # such words.
            "MATCH (o:Observation) WHERE (regexp_matches(o.text, '[0-9]')"
            f" AND regexp_matches(o.text, '(?i){DAYS_NAMED}'))"
            f" OR (regexp_matches(o.text, '(?i){WEEKDAY}')"
            f" AND (regexp_matches(o.text, '(?i){PLAN_TOLD}')"
            f" OR regexp_matches(o.text, '(?i){PLAN_MOVED}')"
            f" OR regexp_matches(o.text, '(?i){PLAN_VERBS}')))"
            " SET o.event_times = NULL".replace("\\", "\\\\"),
        ),
    ),
    Migration(
        26,
        "event times read again: plans in the present progressive, notes of events, errands,"
        " days inside names",
        (
            # "The user is meeting Ana on 9 May", "I'm seeing the doctor on Friday", "Lunch
            # with Ana on 9 May.", "Sam has lunch with Ana on Friday", "remind me to call mum
            # on Sunday", "the release is planned for 15 May" tell of days to come (read as
            # days gone, a date a year back, or none), and "GPT-4o-2024-08-06" names a
            # model, no day. Read again every text naming a weekday or holding an ISO 8601
            # day, and those holding a digit beside a day named.
            "MATCH (o:Observation) WHERE (regexp_matches(o.text, '[0-9]')"
            f" AND regexp_matches(o.text, '(?i){DAYS_NAMED}'))"
            f" OR regexp_matches(o.text, '(?i){WEEKDAY}')"
            f" OR regexp_matches(o.text, '{ISO_DAY}')"
            " SET o.event_times = NULL".replace("\\", "\\\\"),
        ),
    ),
    Migration(
        27,
        "event times read again: days of a month told in no past tense, full stops of short"
        " forms, habits of weekday mornings, plans kept, counts of several, outcomes told",
        (
            # "Maya has a check-in on 10 December", said on 3 December, was a year back, and so
            # was "her passport expires on 10 January"; "an appointment with Dr. Kim on Monday"
            # was the Monday gone ("Dr." ended the sentence and its plan); "runs on Tuesday
            # mornings" was one Tuesday, "we're still meeting on Friday" the Friday gone,
            # "Dentist on Friday: no cavities!" the Friday to come, "The next visit is in June",
            # said in May, the June a year back, and "several weeks ago" no
            # time (a count a question reads). Read again every text naming a month or a
            # weekday, or saying "several".
            f"MATCH (o:Observation) WHERE regexp_matches(o.text, '(?i){DAYS_NAMED}')"
            f" OR regexp_matches(o.text, '(?i){WEEKDAY}')"
            f" OR regexp_matches(o.text, '(?i){SEVERAL}')"
            " SET o.event_times = NULL".replace("\\", "\\\\"),
        ),
        # Its statement before "several" was read: a store that ran it runs this one again,
        # and start-up reads the texts it clears from their words (clearing twice is
        # harmless).
        earlier=("95dcf90867c5b99dc65ef5f1a1c2316588df069588e2770b047a122181cdf157",),
    ),
    Migration(
        28,
        "event times read again: how it went, then an emoji; weekdays with their day; plans moved",
        (
            # "Dentist on Friday: no cavities \U0001f389", said on Sunday, was the Friday to
            # come; "on Thursday the 19th" the Thursday alone, "Wed 18th" no day; "the dentist
            # moved my appointment to Thursday" and "moved it to 20 November" days gone. Read
            # again every text naming a month, a weekday or an ordinal day.
            f"MATCH (o:Observation) WHERE regexp_matches(o.text, '(?i){DAYS_NAMED}')"
            f" OR regexp_matches(o.text, '(?i){WEEKDAY}')"
            " SET o.event_times = NULL".replace("\\", "\\\\"),
        ),
    ),
    Migration(
        29,
        "event times read again: ordinal days with no month, the end of the month, deadlines,"
        " weekdays someone is coming",
        (
            # "We're in Porto from the 20th to the 23rd" (or "from the 28th to the 3rd"), "by
            # the end of the month", "the essay is due by Friday", "please send it by 15
            # December", "by the end of March" and "Sam is coming Thursday" were no time. Read
            # again every text holding an ordinal day, naming a weekday, saying "end of the
            # month" or "by" before a day or a month's end; as "the launch slipped to March
            # 17" was the March gone, every text saying a plan slipped or was bumped; and, as
            # "Sam's coming on 20 March" was no plan (the March gone), every text saying
            # "'s coming" or so.
            f"MATCH (o:Observation) WHERE regexp_matches(o.text, '(?i){ORDINAL_DAY}')"
            f" OR regexp_matches(o.text, '(?i){WEEKDAY}')"
            f" OR regexp_matches(o.text, '(?i){END_OF_THE_MONTH}')"
            f" OR regexp_matches(o.text, '(?i){BY_DAY}')"
            f" OR regexp_matches(o.text, '(?i){SLIPPED}')"
            f" OR regexp_matches(o.text, '(?i){CONTRACTED_COMING}')"
            " SET o.event_times = NULL".replace("\\", "\\\\"),
            # The UTC offset each observation was told in, minutes east of UTC: its words are
            # read again in that calendar ("tomorrow" told at 21:30 -08:00 is the Californian
            # tomorrow in a memory whose zone is UTC), not the memory's zone. Null for those
            # stored before: unknown, read in the memory's zone as before. (If not there:
            # the migration may run again, and the column is kept as it is.)
            "ALTER TABLE Observation ADD IF NOT EXISTS told_offset INT16",
        ),
        # Its statements before "by 15 December" and "by the end of March" were read, before
        # a plan that slipped was, before the offset was kept, and before "Sam's coming" was
        # read as "Sam is coming": a store that ran one runs
        # this one again, and start-up reads the texts it clears from their words (clearing
        # twice is harmless; the column is added if it is not there).
        earlier=(
            "bcc41f15eb92e066db2cdfe855fd47b30968fecea89b2385fb55a7b1c8539f10",
            "245ad0a51ca604a42ee0fbcee0ffa3a4901928f2e14bce2e9f7ed3f857a9f518",
            "e421513c53c6ca01d86893c59c19eaeb1aeacbe754be1ccb21d0b349aa72e6c8",
            "4d76e8c3f96909b683fa52fd95ee135e72b406d104894800b44a5c63e9b40a57",
        ),
    ),
    Migration(
        30,
        "event times read again: until a time to come, a day of last or next year, errands",
        (
            # "I'm in Berlin until Friday", "the office is closed until the end of the month"
            # and "her contract was extended to June" were no time (after "until" a time was
            # dropped), "the call is postponed until Friday" no day; "in May last year" was
            # May of this year; "Call the plumber on Monday" was the Monday gone: read again
            # every text saying "until", "till" or "extended", a year relative to this one,
            # or opening a sentence with an errand's verb, or saying what should be done.
            f"MATCH (o:Observation) WHERE regexp_matches(o.text, '(?i){UNTIL}')"
            f" OR regexp_matches(o.text, '(?i){RELATIVE_YEAR}')"
            f" OR regexp_matches(o.text, '(?i){ERRAND}')"
            f" OR regexp_matches(o.text, '(?i){SHOULD}')"
            " SET o.event_times = NULL".replace("\\", "\\\\"),
        ),
    ),
    Migration(
        31,
        "entity summaries written anew: names told with and without a leading article",
        (
            # "the user" and "User", "The Beatles" and "Beatles" are one entity now
            # (``topic_key``); each was summarised with half its facts, on a node of its
            # own. The names are keyed at start-up; the summaries are kept, so every one
            # goes, and the start after this writes them all anew (as after migration 15).
            "MATCH (s:Summary) DELETE s",
        ),
    ),
    Migration(
        32,
        "event times read again: errands whose verb is also a noun",
        (
            # "Book a table by Thursday" and "Order the cake by Friday" were no time, "Fix the
            # sink on Monday" the Monday gone: read again every text opening a sentence with
            # such a verb and its object's determiner.
            f"MATCH (o:Observation) WHERE regexp_matches(o.text, '(?i){ERRAND_OBJECT}')"
            " SET o.event_times = NULL".replace("\\", "\\\\"),
        ),
    ),
)

#: Columns no longer written or read, left in place (migrations 14, 15): table -> columns. An
#: export leaves them out; an import reads them from older files and leaves them out too.
RETIRED: dict[str, dict[str, str]] = {
    "Recall": {"query_vector": "FLOAT[]", "query_embedding": "STRING", "query_embedder": "STRING"},
    "Topic": {"summary": "STRING", "summary_at": "TIMESTAMP"},
}

#: The live schema this code expects: table -> {column: type}. Kept literal on purpose: a test
#: checks that applying MIGRATIONS to an empty store yields exactly this.
EXPECTED: dict[str, dict[str, str]] = {
    MIGRATION_TABLE: {
        "version": "INT64",
        "name": "STRING",
        "checksum": "STRING",
        "applied_at": "TIMESTAMP",
    },
    "Agent": {"name": "STRING"},
    "Topic": {"name": "STRING", "kind": "STRING", "summary": "STRING", "summary_at": "TIMESTAMP"},
    "Episode": {
        "id": "STRING",
        "session_id": "STRING",
        "started_at": "TIMESTAMP",
        "summary": "STRING",
    },
    "Observation": {
        "id": "STRING",
        "seq": "INT64",
        "text": "STRING",
        "text_key": "STRING",
        "observed_at": "TIMESTAMP",
        "recorded_at": "TIMESTAMP",
        "confidence": DECIMAL,
        "source": "STRING",
        "kind": "STRING",
        "subject": "STRING",
        "predicate": "STRING",
        "object": "STRING",
        "valid_from": "TIMESTAMP",
        "valid_until": "TIMESTAMP",
        "retracted_at": "TIMESTAMP",
        "hits": "INT64",
        "impressions": "INT64",
        "stated_until": "TIMESTAMP",
        "event_times": "STRING",
        "told_offset": "INT16",
    },
    "Belief": {
        "id": "STRING",
        "since": "TIMESTAMP",
        "confidence": DECIMAL,
        "retracted_at": "TIMESTAMP",
        "held_until": "TIMESTAMP",
        "forgotten_at": "TIMESTAMP",
    },
    "Predicate": {"name": "STRING", "cardinality": "STRING", "since": "TIMESTAMP"},
    "Recall": {
        "id": "STRING",
        "query": "STRING",
        "agent": "STRING",
        "at": "TIMESTAMP",
        "judged_at": "TIMESTAMP",
        "query_vector": "FLOAT[]",
        "features": "STRING[]",
        "query_embedding": "STRING",
        "query_embedder": "STRING",
        "embedder": "STRING",
    },
    "JudgedQuery": {"recall": "STRING", "vector": "STRING", "embedder": "STRING"},
    "Summary": {"topic": "STRING", "text": "STRING", "at": "TIMESTAMP"},
    "MENTIONS": {},
    "HOLDS": {},
    "OF": {},
    "SUPPORTS": {"weight": DECIMAL},
    "CONTRADICTS": {"at": "TIMESTAMP"},
    "SUPERSEDES": {"at": "TIMESTAMP", "known": "TIMESTAMP", "dropped": "TIMESTAMP"},
    "FROM": {},
    "RETURNED": {
        "rank": "INT64",
        "score": "DOUBLE",
        "judgement": "STRING",
    },
    "CoActivation": {"pair": "STRING", "a": "STRING", "b": "STRING", "count": "INT64"},
    "RecordType": {"name": "STRING"},
    "FieldValue": {"key": "STRING", "field": "STRING", "kind": "STRING", "value": "STRING"},
    "IS_A": {},
    "HAS_FIELD": {"position": "INT64", "name": "STRING", "kind": "STRING", "value": "STRING"},
}


def judged(applied: Mapping[int, tuple[str, str]]) -> tuple[list[str], set[int]]:
    """What this version makes of the migrations a store records (version -> (name,
    checksum)): the issues that stop it opening (a migration a newer doxa applied, or one
    altered since), and the versions it runs again (applied with an ``earlier`` statement)."""
    known = {m.version: m for m in MIGRATIONS}
    issues: list[str] = []
    again: set[int] = set()
    for version, (name, checksum) in sorted(applied.items()):
        migration = known.get(version)
        if migration is None:
            issues.append(
                f"migration {version} ({name!r}) was applied by a newer doxa"
                f" (this one knows up to {latest_version()})"
            )
        elif checksum in migration.earlier:
            again.add(version)  # an earlier doxa's statements: run this one's again
        elif migration.checksum != checksum:
            issues.append(f"migration {version} ({name!r}) was altered after it was applied")
    return issues, again


def latest_version() -> int:
    """The highest migration version this code knows."""
    return MIGRATIONS[-1].version


def compare(live: dict[str, dict[str, str]]) -> list[str]:
    """Differences between a live schema and ``EXPECTED``, one readable line each."""
    issues: list[str] = []
    for table, columns in EXPECTED.items():
        if table not in live:
            issues.append(f"table {table!r} is missing")
            continue
        for column, kind in columns.items():
            found = live[table].get(column)
            if found is None:
                issues.append(f"table {table!r} has no column {column!r}")
            elif found != kind:
                issues.append(f"column {table}.{column} is {found}, expected {kind}")
        for column in live[table]:
            if column not in columns:
                issues.append(f"table {table!r} has an unknown column {column!r}")
    issues.extend(f"unknown table {table!r}" for table in live if table not in EXPECTED)
    return issues
