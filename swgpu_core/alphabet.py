"""Residue alphabets and their byte codes.

The database stores residues as small integer codes so that kernels can index a
substitution profile directly. Protein codes follow the order of the NCBI/Biopython
BLOSUM tables (``ARNDCQEGHILKMFPSTWYVBZX*``), then the rare letters U (selenocysteine),
O (pyrrolysine) and J (Leu/Ile) get codes of their own: the database does not depend on
the matrix chosen at search time, and :mod:`swgpu_core.scoring` scores U, O and J as X
unless the matrix defines them. Lower case is accepted and upper-cased.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

INVALID = 255


@dataclass(frozen=True)
class Alphabet:
    """An ordered set of residue letters; a letter's code is its position."""

    name: str
    letters: str
    #: letters accepted on input and stored under another letter's code
    aliases: tuple[tuple[str, str], ...] = ()

    @property
    def size(self) -> int:
        return len(self.letters)

    @property
    def encode_table(self) -> np.ndarray:
        """256-entry lookup from byte to code; :data:`INVALID` marks non-residues."""
        table = np.full(256, INVALID, dtype=np.uint8)
        for code, letter in enumerate(self.letters):
            table[ord(letter)] = code
            table[ord(letter.lower())] = code
        for letter, target in self.aliases:
            table[ord(letter)] = self.letters.index(target)
            table[ord(letter.lower())] = self.letters.index(target)
        return table

    @property
    def lookup(self) -> bytes:
        """:attr:`encode_table` as the 256 bytes ``translate`` takes, made once per alphabet
        (a FASTA file's records are encoded one by one)."""
        table = _ENCODE_CACHE.get(self.name)
        if table is None:
            table = _ENCODE_CACHE[self.name] = self.encode_table.tobytes()
        return table

    @property
    def decode_table(self) -> np.ndarray:
        return np.frombuffer(self.letters.encode("ascii"), dtype=np.uint8).copy()

    def encode(self, sequence: str | bytes, delete: bytes = b"") -> np.ndarray:
        """Codes for ``sequence`` less the bytes in ``delete`` (a FASTA body's line ends);
        raises ``ValueError`` naming the first bad character (its position counts codes).
        Text is taken as Latin-1, as the FASTA reader decodes it, so a bad byte is named as
        it is in the file (:meth:`encode_span` says how)."""
        if isinstance(sequence, str):
            try:
                data = sequence.encode("latin-1")
            except UnicodeEncodeError:  # text from elsewhere than a file: beyond Latin-1, never a residue
                data = sequence.encode("ascii", "replace")
        else:
            data = bytes(sequence)
        return self.encode_span(data, 0, len(data), delete)

    def encode_span(self, data: bytes | bytearray, start: int, stop: int, delete: bytes = b"") -> np.ndarray:
        """Codes for ``data[start:stop]`` less the bytes in ``delete``, as :meth:`encode`,
        without copying the span out of ``data`` first (a bytearray, such as a whole FASTA
        file, then gives codes that share the one buffer the lookup writes).

        The lookup is ``bytes.translate`` through the 256-byte table, one pass in C that also
        drops ``delete``: numpy's indexing of the table took 0.63 s for a 10^8-residue target,
        this 0.18 s. It runs over all of ``data`` (a header before ``start`` is a few bytes;
        a span that ends early, data after ``stop``, is not a case that needs speed)."""
        out = data.translate(self.lookup, delete)
        out = out if isinstance(out, bytearray) else bytearray(out)  # writable codes

        def dropped(a: int, b: int) -> int:
            return sum(data.count(bytes([d]), a, b) for d in set(delete)) if delete and b > a else 0

        lead = start - dropped(0, start)
        n = len(out) - lead - (len(data) - stop - dropped(stop, len(data)))
        bad = out.find(INVALID, lead, lead + n) if n > 0 else -1  # memchr in C: no array reduction per record
        if bad >= 0:
            pos = bad - lead
            raise ValueError(unknown_residue(bytes(data[start:stop]).translate(None, delete)[pos], pos + 1))
        return np.frombuffer(out, np.uint8, n, lead) if n > 0 else np.zeros(0, np.uint8)

    def decode(self, codes: np.ndarray) -> str:
        return self.decode_table[np.asarray(codes, dtype=np.uint8)].tobytes().decode("ascii")


_ENCODE_CACHE: dict[str, bytes] = {}  # per alphabet: its encode_table as bytes


def unknown_residue(byte: int, position: int) -> str:
    """What is wrong with a byte that is no residue at (1-based) ``position`` of a sequence:
    a printable byte named as itself, any other by its value."""
    char = repr(chr(byte)) if 32 < byte < 127 else f"byte 0x{byte:02x}"
    return f"unknown residue {char} at position {position}"


#: 20 standard amino acids, the ambiguity codes B Z X, the stop ``*``, then U O J.
PROTEIN = Alphabet("protein", "ARNDCQEGHILKMFPSTWYVBZX*UOJ")

#: Nucleotides; U is stored as T, IUPAC ambiguity codes are kept so that a matrix can score them.
DNA = Alphabet("dna", "ACGTNRYSWKMBDHV", aliases=(("U", "T"),))

ALPHABETS = {a.name: a for a in (PROTEIN, DNA)}


def get_alphabet(name: str) -> Alphabet:
    try:
        return ALPHABETS[name]
    except KeyError:
        raise ValueError(f"unknown alphabet {name!r} (known: {', '.join(ALPHABETS)})") from None
