/* termtext.c - text from the archive, written for a terminal. */
#include "termtext.h"

#include <string.h>

/* Whether code point `cp` takes two columns: the East Asian wide and
 * full-width blocks and the emoji (Unicode's EastAsianWidth W and F, in
 * broad ranges). */
static bool
wide(unsigned cp)
{
	return (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf &&
	    cp != 0x303f) || (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 &&
	    cp <= 0xfaff) || (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 &&
	    cp <= 0xff60) || (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 &&
	    cp <= 0x1f64f) || (cp >= 0x1f900 && cp <= 0x1f9ff) || (cp >=
	    0x20000 && cp <= 0x3fffd);
}

/* Whether code point `cp` is one a reader does not see as written:
 * invisible, it joins two texts that look like one, reorders the text
 * around it or breaks its line. The soft hyphen, the Arabic letter mark,
 * the Mongolian vowel separator, the zero-width space, the direction
 * marks, the line and paragraph separators, the embeddings and
 * overrides, the word joiner and invisible operators, the isolates and
 * the deprecated format controls, the zero-width no-break space (BOM),
 * the interlinear annotations and the tag characters (a hidden ASCII
 * text). The joiners U+200C-U+200D are left: scripts and emoji need
 * them. */
static bool
invisible(unsigned cp)
{
	return cp == 0x00ad || cp == 0x061c || cp == 0x180e || cp == 0x200b ||
	    (cp >= 0x200e && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) ||
	    (cp >= 0x2060 && cp <= 0x206f && cp != 0x2065) || cp == 0xfeff ||
	    (cp >= 0xfff9 && cp <= 0xfffb) || (cp >= 0xe0000 && cp <= 0xe007f);
}

/* Whether code point `cp` takes no column of its own: combining marks
 * (on the letter before them), the joiners and the variation selectors,
 * in broad ranges. */
static bool
zero_width(unsigned cp)
{
	return (cp >= 0x0300 && cp <= 0x036f) || (cp >= 0x0483 && cp <=
	    0x0489) || (cp >= 0x0591 && cp <= 0x05bd) || (cp >= 0x0610 && cp <=
	    0x061a) || (cp >= 0x064b && cp <= 0x065f) || cp == 0x0e31 || (cp >=
	    0x0e34 && cp <= 0x0e3a) || (cp >= 0x0e47 && cp <= 0x0e4e) || (cp >=
	    0x1ab0 && cp <= 0x1aff) || (cp >= 0x1dc0 && cp <= 0x1dff) || (cp >=
	    0x200c && cp <= 0x200d) || (cp >= 0x20d0 && cp <= 0x20ff) || (cp >=
	    0xfe00 && cp <= 0xfe0f) || (cp >= 0xfe20 && cp <= 0xfe2f) || (cp >=
	    0xe0100 && cp <= 0xe01ef);
}

/* The bytes of the well-formed UTF-8 character of two to four bytes `s`
 * starts with, its code point in *cp; 0 for an ASCII byte, a stray or
 * cut-short byte, an overlong form, a surrogate or past U+10FFFF. */
static size_t
utf8_char(const unsigned char *s, unsigned *cp)
{
	static const unsigned least[] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t n, i;

	n = s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ?
	    3 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
	if (n == 0)
		return 0;
	*cp = s[0] & (0x7fu >> n);
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (s[i] & 0x3fu);
	}
	if (*cp < least[n] || (*cp >= 0xd800 && *cp <= 0xdfff) ||
	    *cp > 0x10ffff)
		return 0;
	return n;
}

static void
escape(unsigned cp, char esc[DLQ_TERM_ESC_MAX])
{
	snprintf(esc, DLQ_TERM_ESC_MAX, cp > 0xffff ? "\\U%08x" : "\\u%04x",
	    cp);
}

size_t
dlq_term_invisible(const unsigned char *s, char esc[DLQ_TERM_ESC_MAX])
{
	unsigned cp;
	size_t n = utf8_char(s, &cp);

	if (n == 0 || !invisible(cp))
		return 0;
	escape(cp, esc);
	return n;
}

/* One character of `s` as it is shown: `out` holds what to write (the
 * character's own bytes, or its escape), `*cols` the columns it takes.
 * Returns the bytes of `s` it stands for (1 at least: `s` is not at its
 * end). */
static size_t
unit(const unsigned char *s, bool keep_lines, char out[DLQ_TERM_ESC_MAX],
    int *cols)
{
	static const char hex[] = "0123456789abcdef";
	size_t n;
	unsigned cp;
	unsigned char c = s[0];

	if (c >= 0x20 && c < 0x7f) {
		out[0] = (char)c, out[1] = '\0', *cols = 1;
		return 1;
	}
	if (keep_lines && (c == '\n' || c == '\t')) {
		out[0] = (char)c, out[1] = '\0', *cols = 0;
		return 1;
	}
	n = utf8_char(s, &cp);
	if (n == 2 && cp <= 0x9f)	/* a C1 control */
		n = 0;
	if (n > 0 && invisible(cp)) {
		escape(cp, out);
		*cols = (int)strlen(out);
		return n;
	}
	if (n > 0) {
		memcpy(out, s, n);
		out[n] = '\0', *cols = zero_width(cp) ? 0 : wide(cp) ? 2 : 1;
		return n;
	}
	out[0] = '\\', out[2] = '\0', *cols = 2;
	if (c == '\n')
		out[1] = 'n';
	else if (c == '\t')
		out[1] = 't';
	else if (c == '\r')
		out[1] = 'r';
	else if (c == 0x1b)
		out[1] = 'e';
	else {
		out[1] = 'x', out[2] = hex[c >> 4], out[3] = hex[c & 15];
		out[4] = '\0', *cols = 4;
	}
	return 1;
}

int
dlq_term_width(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char out[DLQ_TERM_ESC_MAX];
	int w = 0, cols;

	while (*p != '\0') {
		p += unit(p, false, out, &cols);
		w += cols;
	}
	return w;
}

int
dlq_term_put(FILE *f, const char *s, int max, int pad)
{
	const unsigned char *p = (const unsigned char *)s;
	bool cut = max >= 0 && dlq_term_width(s) > max;
	char out[DLQ_TERM_ESC_MAX];
	int w = 0, cols;

	while (*p != '\0') {
		size_t n = unit(p, false, out, &cols);

		if (cut && w + cols > max - 1)
			break;
		fputs(out, f);
		w += cols;
		p += n;
	}
	if (cut && max > 0) {
		fputs("…", f);
		w++;
	}
	for (; w < pad; w++)
		fputc(' ', f);
	return w;
}

void
dlq_term_add(struct dlq_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char out[DLQ_TERM_ESC_MAX];
	int cols;

	while (*p != '\0') {
		p += unit(p, false, out, &cols);
		dlq_buf_adds(b, out);
	}
}

bool
dlq_term_has_control(const char *s, bool spaces)
{
	const unsigned char *p;

	for (p = (const unsigned char *)s; *p != '\0'; p++)
		if (*p < ' ' || *p == 0x7f || (spaces && *p == ' '))
			return true;
	return false;
}

void
dlq_term_put_lines(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char out[DLQ_TERM_ESC_MAX];
	int cols;

	while (*p != '\0') {
		p += unit(p, true, out, &cols);
		fputs(out, f);
	}
}
