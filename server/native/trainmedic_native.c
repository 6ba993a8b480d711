/* Loops of trainmedic's chunk scan in C, with the same answers as their Python versions, which
 * stay the reference and run wherever this module is not installed: logs/reader.py's
 * _resolve_overwrites and _newlines, and metrics/samples.py's _named_pairs (its _PAIR regex),
 * _changes, _word_starts and _zero_loss (its zero-loss signal).
 * Each is a plain loop over bytes or ASCII text: no Python object per byte, word or line that
 * is not returned. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define HAVE_SSE2
#endif
#if defined(_MSC_VER)
#include <intrin.h>
#endif

static int append_offset(PyObject *list, Py_ssize_t offset)
{
    PyObject *number = PyLong_FromSsize_t(offset);
    int failed = number == NULL || PyList_Append(list, number) < 0;
    Py_XDECREF(number);
    return failed ? -1 : 0;
}

/* The last index of `byte` in data[start, end), or -1. */
static Py_ssize_t last_of(const char *data, Py_ssize_t start, Py_ssize_t end, char byte)
{
    while (end > start)
        if (data[--end] == byte)
            return end;
    return -1;
}

static Py_ssize_t first_of(const char *data, Py_ssize_t start, Py_ssize_t size, char byte)
{
    const char *at = start < size ? memchr(data + start, byte, (size_t)(size - start)) : NULL;
    return at == NULL ? -1 : at - data;
}

PyDoc_STRVAR(resolve_overwrites_doc,
"resolve_overwrites(data) -> bytes\n\n"
"Each line holding a carriage return as a terminal finally showed it: what follows its last\n"
"\\r, or, where \\rs end the line, what the last of them ends.");

/* What resolving the overwrites of data[0, size) keeps, copied to `out` unless it is NULL;
 * how many bytes that is. Run once to measure and once to copy, so that the result is made at
 * its size: shrinking a megabyte that was made larger leaves the allocator a hole per chunk. */
static Py_ssize_t resolve(const char *data, Py_ssize_t size, char *out)
{
    Py_ssize_t start = 0, kept = 0, cr = first_of(data, 0, size, '\r');
#define KEEP(from, to) ((out != NULL ? memcpy(out + kept, data + (from), \
                                             (size_t)((to) - (from))) : NULL), \
                        kept += (to) - (from))
    while (cr >= 0) {
        Py_ssize_t line_start = last_of(data, start, cr, '\n') + 1;
        Py_ssize_t line_end = first_of(data, cr, size, '\n');
        Py_ssize_t last;
        if (line_start == 0)
            line_start = start;
        if (line_end < 0)
            line_end = size;
        last = last_of(data, cr, line_end, '\r');
        KEEP(start, line_start);
        if (last == line_end - 1) {  /* \rs end the line: what they end is what shows */
            Py_ssize_t text_end = line_end, text_start;
            while (text_end > line_start && data[text_end - 1] == '\r')
                text_end--;
            text_start = last_of(data, line_start, text_end, '\r') + 1;
            if (text_start == 0)
                text_start = line_start;
            KEEP(text_start, text_end);
            start = line_end;
        }
        else
            start = last + 1;
        cr = first_of(data, line_end, size, '\r');
    }
    KEEP(start, size);
#undef KEEP
    return kept;
}

static PyObject *resolve_overwrites(PyObject *module, PyObject *args)
{
    Py_buffer buffer;
    PyObject *result;
    if (!PyArg_ParseTuple(args, "y*:resolve_overwrites", &buffer))
        return NULL;
    result = PyBytes_FromStringAndSize(NULL, resolve(buffer.buf, buffer.len, NULL));
    if (result != NULL)
        resolve(buffer.buf, buffer.len, PyBytes_AS_STRING(result));
    PyBuffer_Release(&buffer);
    return result;
}

/* ASCII classes as Python's `re` reads them in a str pattern. */
static int is_letter(unsigned char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
static int is_word(unsigned char c) { return c == '_' || is_letter(c) || (c >= '0' && c <= '9'); }
static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int is_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static Py_ssize_t digits(const unsigned char *s, Py_ssize_t at, Py_ssize_t n)
{
    while (at < n && is_digit(s[at]))
        at++;
    return at;
}

/* The end of an exponent `[eE][-+]?\d+` at `at`, or `at` when there is none. */
static Py_ssize_t exponent(const unsigned char *s, Py_ssize_t at, Py_ssize_t n)
{
    Py_ssize_t p = at;
    if (p < n && (s[p] == 'e' || s[p] == 'E')) {
        p++;
        if (p < n && (s[p] == '-' || s[p] == '+'))
            p++;
        if (p < n && is_digit(s[p]))
            return digits(s, p, n);
    }
    return at;
}

static int starts_with(const unsigned char *s, Py_ssize_t at, Py_ssize_t n, const char *word)
{
    size_t length = strlen(word);
    return (size_t)(n - at) >= length && memcmp(s + at, word, length) == 0;
}

/* The end of _NUMBER at `at` followed by `(?![\w.])`, or -1. Where the longest reading is
 * followed by a word character or a dot, every shorter one is too (it ends before a digit, a
 * dot or an e), so the longest decides, as `re`'s backtracking does. */
static Py_ssize_t number_end(const unsigned char *s, Py_ssize_t at, Py_ssize_t n)
{
    Py_ssize_t p = at, end = -1;
    if (p < n && (s[p] == '-' || s[p] == '+'))
        p++;
    if (p < n && is_digit(s[p])) {
        end = digits(s, p, n);
        if (end < n && s[end] == '.')
            end = digits(s, end + 1, n);
        end = exponent(s, end, n);
    }
    else if (p + 1 < n && s[p] == '.' && is_digit(s[p + 1]))
        end = exponent(s, digits(s, p + 1, n), n);
    else if (starts_with(s, p, n, "nan") || starts_with(s, p, n, "NaN")
             || starts_with(s, p, n, "inf") || starts_with(s, p, n, "Inf"))
        end = p + 3;
    else if (starts_with(s, p, n, "-inf"))  /* after a sign: `[-+]?` then the `-inf` branch */
        end = p + 4;
    if (end < 0 || (end < n && (is_word(s[end]) || s[end] == '.')))
        return -1;
    return end;
}

static const char *const PHRASES[] = {
    "lm loss", "loss scale", "grad norm", "learning rate", "number of skipped iterations",
};

/* After a key ending at `at`: `['"]?\s{0,3}[:=]\s{0,3}` and a number. The value's start and
 * end, or -1. */
static Py_ssize_t value_at(const unsigned char *s, Py_ssize_t at, Py_ssize_t n,
                           Py_ssize_t *value_start)
{
    int spaces;
    if (at < n && (s[at] == '\'' || s[at] == '"'))
        at++;
    for (spaces = 0; spaces < 3 && at < n && is_space(s[at]); spaces++)
        at++;
    if (at >= n || (s[at] != ':' && s[at] != '='))
        return -1;
    at++;
    for (spaces = 0; spaces < 3 && at < n && is_space(s[at]); spaces++)
        at++;
    *value_start = at;
    return number_end(s, at, n);
}

/* The pair found at `i`, or -1: its key's start and end, its value's start and end. */
static Py_ssize_t pair_at(const unsigned char *s, Py_ssize_t i, Py_ssize_t n, Py_ssize_t *key_start,
                          Py_ssize_t *key_end, Py_ssize_t *value_start)
{
    Py_ssize_t value_end = -1;
    size_t phrase;
    if (i > 0 && (is_word(s[i - 1]) || s[i - 1] == '.'))  /* (?<![\w.]) */
        return -1;
    *key_start = i + (s[i] == '\'' || s[i] == '"');
    for (phrase = 0; phrase < sizeof PHRASES / sizeof *PHRASES && value_end < 0; phrase++)
        if (starts_with(s, *key_start, n, PHRASES[phrase])) {
            *key_end = *key_start + (Py_ssize_t)strlen(PHRASES[phrase]);
            value_end = value_at(s, *key_end, n, value_start);
        }
    if (value_end < 0 && *key_start < n && (is_letter(s[*key_start]) || s[*key_start] == '_')) {
        Py_ssize_t limit = *key_start + 41 < n ? *key_start + 41 : n;  /* [\w/]{0,40}+ */
        *key_end = *key_start + 1;
        while (*key_end < limit && (is_word(s[*key_end]) || s[*key_end] == '/'))
            (*key_end)++;
        value_end = value_at(s, *key_end, n, value_start);
    }
    return value_end;
}

/* The longest key `re` can read, lower-cased into a buffer on the stack. */
#define KEY_MAX 64

PyDoc_STRVAR(named_pairs_doc,
"named_pairs(line, names) -> list[tuple[str, str]] | None\n\n"
"The (name, value) of each `key: value` or `key=value` pair that `_PAIR.findall(line)` of\n"
"metrics/samples.py reads from an ASCII line, whose lower-cased key `names` maps to a name;\n"
"None for a line that is not ASCII.");

static PyObject *named_pairs(PyObject *module, PyObject *args)
{
    PyObject *line, *names, *found;
    const unsigned char *s;
    Py_ssize_t n, i = 0;
    if (!PyArg_ParseTuple(args, "UO!:named_pairs", &line, &PyDict_Type, &names))
        return NULL;
    if (!PyUnicode_IS_ASCII(line))
        Py_RETURN_NONE;
    s = (const unsigned char *)PyUnicode_1BYTE_DATA(line);
    n = PyUnicode_GET_LENGTH(line);
    found = PyList_New(0);
    while (found != NULL && i < n) {
        Py_ssize_t key_start = 0, key_end = 0, value_start = 0, k;
        Py_ssize_t value_end = pair_at(s, i, n, &key_start, &key_end, &value_start);
        char lowered[KEY_MAX];
        PyObject *key, *name, *pair;
        if (value_end < 0) {
            i++;
            continue;
        }
        i = value_end;
        for (k = key_start; k < key_end; k++)
            lowered[k - key_start] = (char)(is_letter(s[k]) ? s[k] | 0x20 : s[k]);
        key = PyUnicode_FromStringAndSize(lowered, key_end - key_start);
        name = key == NULL ? NULL : PyDict_GetItemWithError(names, key);  /* borrowed */
        Py_XDECREF(key);
        if (name == NULL) {
            if (key == NULL || PyErr_Occurred())
                Py_CLEAR(found);
            continue;
        }
        pair = Py_BuildValue("(Os#)", name, s + value_start, value_end - value_start);
        if (pair == NULL || PyList_Append(found, pair) < 0)
            Py_CLEAR(found);
        Py_XDECREF(pair);
    }
    return found;
}

PyDoc_STRVAR(changes_doc,
"changes(data, positions, width) -> list[int]\n\n"
"The indices i >= 1 of `positions` where the `width` bytes from positions[i], up to the end\n"
"of their line, differ from those from positions[i - 1]: where a line says something new.");

/* The end of what is said from `at`: `width` bytes at most, up to the line's end. */
static Py_ssize_t said_end(const char *data, Py_ssize_t size, Py_ssize_t at, Py_ssize_t width)
{
    Py_ssize_t end = at + width < size ? at + width : size;
    const char *newline = at < end ? memchr(data + at, '\n', (size_t)(end - at)) : NULL;
    return newline == NULL ? (at < end ? end : at) : newline - data;
}

static PyObject *changes(PyObject *module, PyObject *args)
{
    Py_buffer buffer;
    PyObject *sequence, *positions, *found;
    Py_ssize_t width, count, i, before = 0, before_end = 0;
    if (!PyArg_ParseTuple(args, "y*On:changes", &buffer, &sequence, &width))
        return NULL;
    positions = PySequence_Fast(sequence, "changes: positions must be a sequence");
    if (positions == NULL) {
        PyBuffer_Release(&buffer);
        return NULL;
    }
    found = PyList_New(0);
    count = PySequence_Fast_GET_SIZE(positions);
    for (i = 0; found != NULL && i < count; i++) {
        const char *data = buffer.buf;
        Py_ssize_t at = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(positions, i)), end;
        if (at == -1 && PyErr_Occurred()) {
            Py_CLEAR(found);
            break;
        }
        if (at < 0 || at > buffer.len) {
            PyErr_SetString(PyExc_ValueError, "a position outside the data");
            Py_CLEAR(found);
            break;
        }
        end = said_end(data, buffer.len, at, width);
        if (i > 0 && (end - at != before_end - before
                      || memcmp(data + at, data + before, (size_t)(end - at)) != 0)
                && append_offset(found, i) < 0)
            Py_CLEAR(found);
        before = at;
        before_end = end;
    }
    Py_DECREF(positions);
    PyBuffer_Release(&buffer);
    return found;
}

PyDoc_STRVAR(word_starts_doc,
"word_starts(data, words) -> list[list[int]]\n\n"
"For each of `words` (non-empty bytes), where it starts in data, each occurrence after the\n"
"end of the one before (as repeated bytes.find from there finds them).");

#define WORD_BLOCK 256

/* One word being looked for: its bytes, and the list of its starts with where the next may. */
struct word {
    const unsigned char *bytes;
    Py_ssize_t size, free, anchor;  /* anchor: the byte memchr looks for, the word's rarest */
    PyObject *starts;
};

/* How rare a byte is in a log's text: a capital or a rare lowercase letter more than a common
 * one (English letters by frequency), any letter more than a space, digit or sign. */
static int rarity(unsigned char c)
{
    static const char by_frequency[] = "etaoinshrdlcumwfgypbvkjxqz";
    const char *at = c >= 'a' && c <= 'z' ? strchr(by_frequency, c) : NULL;
    if (at != NULL)
        return (int)(at - by_frequency) + 1;
    return c >= 'A' && c <= 'Z' ? 27 : 0;
}

/* Where in `word` its rarest byte is (the first of the rarest). */
static Py_ssize_t rarest(const unsigned char *bytes, Py_ssize_t size)
{
    Py_ssize_t best = 0, i;
    for (i = 1; i < size; i++)
        if (rarity(bytes[i]) > rarity(bytes[best]))
            best = i;
    return best;
}

/* Whether `word` may start in data[at, end): a loop the compiler turns into vector compares of
 * the word's first and last bytes, so that a block without one costs next to nothing. */
static int may_start(const unsigned char *data, Py_ssize_t at, Py_ssize_t end,
                     const struct word *word)
{
    unsigned char first = word->bytes[0], last = word->bytes[word->size - 1], any = 0;
    const unsigned char *tail = data + word->size - 1;
    Py_ssize_t i;
    if (end - at == WORD_BLOCK) {
        for (i = at; i < at + WORD_BLOCK; i++)
            any |= (data[i] == first) & (tail[i] == last);
    } else {
        for (i = at; i < end; i++)
            any |= (data[i] == first) & (tail[i] == last);
    }
    return any;
}

/* The starts of `word` in data[at, end) after its last one, added to its list; -1 on error.
 * memchr looks for the word's rarest byte, not its first ("scale" for its c, not its s: a
 * Megatron-LM line holds a dozen s). */
static int add_starts(const unsigned char *data, Py_ssize_t at, Py_ssize_t end, struct word *word)
{
    const Py_ssize_t anchor = word->anchor;
    const unsigned char *next = data + (at > word->free ? at : word->free) + anchor;
    const unsigned char *stop = data + end + anchor;
    while (next < stop && (next = memchr(next, word->bytes[anchor], (size_t)(stop - next)))
                          != NULL) {
        const unsigned char *start = next - anchor;
        if (memcmp(start, word->bytes, (size_t)word->size) != 0) {
            next++;
            continue;
        }
        if (append_offset(word->starts, start - data) < 0)
            return -1;
        word->free = start - data + word->size;
        next = start + word->size + anchor;
    }
    return 0;
}

/* Block by block, each word in turn: a block is read from memory once for all of them. */
static PyObject *word_starts(PyObject *module, PyObject *args)
{
    Py_buffer buffer;
    PyObject *sequence, *items, *found = NULL;
    struct word *words = NULL;
    Py_ssize_t count, w, block;
    if (!PyArg_ParseTuple(args, "y*O:word_starts", &buffer, &sequence))
        return NULL;
    items = PySequence_Fast(sequence, "word_starts: words must be a sequence");
    if (items == NULL)
        goto done;
    count = PySequence_Fast_GET_SIZE(items);
    words = PyMem_New(struct word, count > 0 ? count : 1);
    found = words != NULL ? PyList_New(count) : PyErr_NoMemory();
    for (w = 0; found != NULL && w < count; w++) {
        PyObject *item = PySequence_Fast_GET_ITEM(items, w);
        if (!PyBytes_Check(item) || PyBytes_GET_SIZE(item) == 0) {
            PyErr_SetString(PyExc_ValueError, "word_starts: each word must be non-empty bytes");
            Py_CLEAR(found);
            break;
        }
        words[w].bytes = (const unsigned char *)PyBytes_AS_STRING(item);
        words[w].size = PyBytes_GET_SIZE(item);
        words[w].anchor = rarest(words[w].bytes, words[w].size);
        words[w].free = 0;
        words[w].starts = PyList_New(0);
        if (words[w].starts == NULL)
            Py_CLEAR(found);
        else
            PyList_SET_ITEM(found, w, words[w].starts);
    }
    for (block = 0; found != NULL && block < buffer.len; block += WORD_BLOCK) {
        for (w = 0; w < count; w++) {
            const unsigned char *data = buffer.buf;
            Py_ssize_t end = buffer.len - words[w].size + 1;  /* past the last place it fits */
            if (block + WORD_BLOCK < end)
                end = block + WORD_BLOCK;
            if (block < end && may_start(data, block, end, &words[w])
                    && add_starts(data, block, end, &words[w]) < 0) {
                Py_CLEAR(found);
                break;
            }
        }
    }
done:
    PyMem_Free(words);
    Py_XDECREF(items);
    PyBuffer_Release(&buffer);
    return found;
}

PyDoc_STRVAR(newlines_doc,
"newlines(data, start, end) -> int\n\n"
"How many newlines data[start:end] holds (start and end clipped as a slice's are).");

/* A loop the compiler turns into vector compares: several times quicker than bytes.count. */
static PyObject *newlines(PyObject *module, PyObject *args)
{
    Py_buffer buffer;
    Py_ssize_t start, end, count = 0, i;
    const unsigned char *data;
    if (!PyArg_ParseTuple(args, "y*nn:newlines", &buffer, &start, &end))
        return NULL;
    PySlice_AdjustIndices(buffer.len, &start, &end, 1);
    data = buffer.buf;
    for (i = start; i + 255 <= end; i += 255) {  /* a byte counts 255 at most: no widening */
        unsigned char block = 0;
        Py_ssize_t j;
        for (j = 0; j < 255; j++)
            block += data[i + j] == '\n';
        count += block;
    }
    for (; i < end; i++)
        count += data[i] == '\n';
    PyBuffer_Release(&buffer);
    return PyLong_FromSsize_t(count);
}

PyDoc_STRVAR(zero_loss_doc,
"zero_loss(data, start) -> int\n\n"
"Where the first match of samples.py's zero-loss signal (its bytes regex, re.MULTILINE) from\n"
"`start` on begins, or -1: \"loss\", a quote or not, up to three blanks, `:` or `=`, up to\n"
"three blanks, and a zero (`0`, `0.`, `0.00`) that no word character or `.` follows.");

/* `\s` of a bytes pattern: ASCII blanks only. */
static int is_byte_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* Whether the zero-loss signal matches from `at`, just after a "loss" in s[0, n). */
static int zero_after_loss(const unsigned char *s, Py_ssize_t at, Py_ssize_t n)
{
    int blanks;
    if (at < n && (s[at] == '\'' || s[at] == '"'))
        at++;
    for (blanks = 0; blanks < 3 && at < n && is_byte_space(s[at]); blanks++)
        at++;
    if (at >= n || (s[at] != ':' && s[at] != '='))
        return 0;
    at++;
    for (blanks = 0; blanks < 3 && at < n && is_byte_space(s[at]); blanks++)
        at++;
    if (at >= n || s[at] != '0')
        return 0;
    at++;
    if (at < n && s[at] == '.')
        for (at++; at < n && s[at] == '0'; at++)
            ;
    return at >= n || (!is_word(s[at]) && s[at] != '.');
}

#ifdef HAVE_SSE2
static int lowest_bit(unsigned mask)
{
#if defined(_MSC_VER)
    unsigned long index;
    _BitScanForward(&index, mask);
    return (int)index;
#else
    return __builtin_ctz(mask);
#endif
}
#endif

/* Where the first "loss" at or after `at` in s[0, n) starts, or -1. With SSE2 (every x86-64),
 * sixteen places at a time are tested for an l with an s three bytes on: a log printing its loss
 * on every line holds l's everywhere, and stopping at each cost three times as much. */
static Py_ssize_t next_loss(const unsigned char *s, Py_ssize_t at, Py_ssize_t n)
{
#ifdef HAVE_SSE2
    const __m128i l = _mm_set1_epi8('l'), last_s = _mm_set1_epi8('s');
    for (; at + 19 <= n; at += 16) {  /* reads s[at, at + 16) and s[at + 3, at + 19) */
        __m128i first = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(s + at)), l);
        __m128i last = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(s + at + 3)), last_s);
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_and_si128(first, last));
        for (; mask != 0; mask &= mask - 1) {
            Py_ssize_t i = at + lowest_bit(mask);
            if (s[i + 1] == 'o' && s[i + 2] == 's')
                return i;
        }
    }
#endif
    for (; at + 4 <= n; at++) {
        const unsigned char *found = memchr(s + at, 'l', (size_t)(n - 3 - at));
        if (found == NULL)
            return -1;
        at = found - s;
        if (memcmp(found, "loss", 4) == 0)
            return at;
    }
    return -1;
}

static PyObject *zero_loss(PyObject *module, PyObject *args)
{
    Py_buffer buffer;
    Py_ssize_t start, at;
    if (!PyArg_ParseTuple(args, "y*n:zero_loss", &buffer, &start))
        return NULL;
    const unsigned char *data = buffer.buf;
    at = next_loss(data, start < 0 ? 0 : start, buffer.len);
    while (at >= 0 && !zero_after_loss(data, at + 4, buffer.len))
        at = next_loss(data, at + 1, buffer.len);
    PyBuffer_Release(&buffer);
    return PyLong_FromSsize_t(at);
}

static PyMethodDef methods[] = {
    {"resolve_overwrites", resolve_overwrites, METH_VARARGS, resolve_overwrites_doc},
    {"named_pairs", named_pairs, METH_VARARGS, named_pairs_doc},
    {"changes", changes, METH_VARARGS, changes_doc},
    {"newlines", newlines, METH_VARARGS, newlines_doc},
    {"word_starts", word_starts, METH_VARARGS, word_starts_doc},
    {"zero_loss", zero_loss, METH_VARARGS, zero_loss_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "trainmedic_native",
    "trainmedic's per-chunk loops in C; see the functions' Python versions in trainmedic.",
    -1, methods,
};

PyMODINIT_FUNC PyInit_trainmedic_native(void) { return PyModule_Create(&module); }
