/* redact.c - mask personal data in payloads and error texts.
 *
 * The JSON masker is a tokenizer, not a parser: it tracks only whether the
 * next string is an object key, so it works on truncated and slightly
 * broken JSON too and never allocates a tree. When in doubt (nesting deeper
 * than it tracks) it stops printing rather than risk a leak. */
#include "redact.h"

#include <ctype.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#define MASK		"***"
#define MAX_DEPTH	64
#define LOOKAHEAD	DLQ_REDACT_LOOKAHEAD

const char *
dlq_payload_kind_name(enum dlq_payload_kind k)
{
	static const char *const names[] = { "empty", "json", "text", "binary" };

	return names[k];
}

/* Character classes of an email address, by table: these run for every
 * byte of every payload and error text logged. ASCII only, as before
 * (isalnum() in the C locale). */
enum { LOCAL = 1, DOMAIN = 2 };

static const unsigned char email_class[256] = {
	['0' ... '9'] = LOCAL | DOMAIN,
	['A' ... 'Z'] = LOCAL | DOMAIN,
	['a' ... 'z'] = LOCAL | DOMAIN,
	['.'] = LOCAL | DOMAIN,
	['-'] = LOCAL | DOMAIN,
	['_'] = LOCAL,
	['%'] = LOCAL,
	['+'] = LOCAL,
};

static bool
local_char(unsigned char c)
{
	return email_class[c] & LOCAL;
}

static bool
domain_char(unsigned char c)
{
	return email_class[c] & DOMAIN;
}

/* Length of the run of local-part characters at s. */
static size_t
local_len(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n && local_char(s[i]))
		i++;
	return i;
}

/* Length of an email address starting at s, whose first `local` bytes
 * are local-part characters (local_len), or 0. */
static size_t
email_at(const unsigned char *s, size_t local, size_t n)
{
	size_t i = local, at, k;

	if (i == 0 || i >= n || s[i] != '@')
		return 0;
	at = i++;
	while (i < n && domain_char(s[i]))
		i++;
	/* not the address: a full stop or a dash after it (bob@x.org.) */
	while (i > at + 1 && (s[i - 1] == '.' || s[i - 1] == '-'))
		i--;
	/* a dot inside the domain, with something after it */
	for (k = i; k > at + 2 && s[k - 1] != '.'; k--)
		;
	return k > at + 2 ? i : 0;
}

size_t
dlq_email_len(const void *p, size_t n)
{
	const unsigned char *s = p;

	return email_at(s, local_len(s, n), n);
}

/* Length of a phone-like digit run starting at s, or 0. */
static size_t
digits_at(const unsigned char *s, size_t n, int min)
{
	size_t i = 0, end = 0;
	int digits = 0;
	bool plus = s[0] == '+';

	if (plus)
		i++;
	while (i < n) {
		if (isdigit(s[i])) {
			digits++;
			end = ++i;
		} else if (plus && (s[i] == ' ' || s[i] == '-' || s[i] == '.' ||
		    s[i] == '(' || s[i] == ')'))
			i++;
		else
			break;
	}
	return digits >= min ? end : 0;
}

/* Whether `n` groups of digits of these lengths, starting at s, read
 * as a date (2026-12-02, 02.12.2026, a span of years 2024-2025) or an
 * IPv4 address (10.20.30.40): kept, as they are no phone number. */
static bool
date_or_address(const unsigned char *s, const size_t *len, int n,
    unsigned char sep)
{
	if (n == 3 && ((len[0] == 4 && len[1] == 2 && len[2] == 2) ||
	    (len[0] == 2 && len[1] == 2 && len[2] == 4)))
		return true;
	if (n == 2 && sep == '-' && len[0] == 4 && len[1] == 4)
		return (s[0] == '1' && s[1] == '9') ||
		    (s[0] == '2' && s[1] == '0');
	return n == 4 && sep == '.' && len[0] <= 3 && len[1] <= 3 &&
	    len[2] <= 3 && len[3] <= 3;
}

/* Length of a phone number written in groups at s, or 0: a group of 1
 * to 5 digits, then groups of 2 to 8 with the same single space, dash
 * or dot between them (555-123-4567, 06 12 34 56 78, 555.123.4567; with
 * dots at least three groups, so a decimal number is none), the first
 * group possibly closed by ")" when `paren` ("(" came before it:
 * (555) 123-4567), at least `min` digits in all, ending a word (not
 * where another separator goes on: 4111 1111-1111). A date or an
 * address (date_or_address) is kept. */
static size_t
grouped_digits_at(const unsigned char *s, size_t n, int min, bool paren)
{
	size_t i = 0, g, len[4] = { 0, 0, 0, 0 };
	size_t digits = 0;
	int groups = 0;
	unsigned char sep = 0;

	for (;;) {
		for (g = 0; i + g < n && isdigit(s[i + g]); g++)
			;
		if (g < (groups == 0 ? 1u : 2u) || g > (groups == 0 ? 5u : 8u))
			return 0;
		if (groups < 4)
			len[groups] = g;
		groups++;
		digits += g;
		i += g;
		if (paren && groups == 1 && i < n && s[i] == ')') {
			if (++i < n && s[i] == ' ')
				i++;
			if (i >= n || !isdigit(s[i]))
				return 0;
			continue;
		}
		if (i + 1 >= n || !isdigit(s[i + 1]) || (s[i] != ' ' &&
		    s[i] != '-' && s[i] != '.') || (sep != 0 && s[i] != sep))
			break;
		sep = s[i++];
	}
	if (groups < (sep == '.' ? 3 : 2) || digits < (size_t)min ||
	    (i < n && isalnum(s[i])) || (i + 1 < n && (s[i] == '-' ||
	    s[i] == '.') && isdigit(s[i + 1])) ||
	    date_or_address(s, len, groups, sep))
		return 0;
	return i;
}

/* Length of a JSON Web Token at s, the `word` bytes of a word: "eyJ"
 * (base64url of '{"') and base64url segments joined by at least two
 * dots (a JWS has two, a JWE four), or 0. A credential, and its claims
 * often name a person: masked wherever it stands. */
static size_t
jwt_at(const unsigned char *s, size_t word)
{
	size_t i, dots = 0;

	if (word < 10 || s[0] != 'e' || s[1] != 'y' || s[2] != 'J')
		return 0;
	for (i = 3; i < word && (isalnum(s[i]) || s[i] == '-' || s[i] == '_' ||
	    s[i] == '.'); i++)
		dots += s[i] == '.';
	while (s[i - 1] == '.') {	/* a full stop ends the sentence */
		i--;
		dots--;
	}
	return dots >= 2 ? i : 0;
}

/* Length of a credential of a well-known service at s, the `word`
 * bytes of a word, known by its prefix and length (what secret
 * scanners look for): a Stripe, GitHub, GitLab, Slack, npm or Google
 * API key or an AWS access key id; or 0. A credential whatever its key
 * (an error text quotes a request), masked wherever it stands. */
static size_t
service_key_at(const unsigned char *s, size_t word)
{
	static const struct { const char *prefix; size_t min, max; } keys[] = {
		{ "sk_live_", 20, 255 }, { "rk_live_", 20, 255 },
		{ "sk_test_", 20, 255 }, { "rk_test_", 20, 255 },
		{ "whsec_", 20, 255 },
		{ "ghp_", 40, 255 }, { "gho_", 40, 255 }, { "ghu_", 40, 255 },
		{ "ghs_", 40, 255 }, { "ghr_", 40, 255 },
		{ "github_pat_", 40, 255 }, { "glpat-", 26, 255 },
		{ "xoxb-", 20, 255 }, { "xoxp-", 20, 255 },
		{ "xoxa-", 20, 255 }, { "xoxr-", 20, 255 },
		{ "xoxe-", 20, 255 }, { "npm_", 40, 40 },
		{ "AIza", 39, 39 }, { "AKIA", 20, 20 }, { "ASIA", 20, 20 },
	};
	size_t i, m;

	while (word > 0 && s[word - 1] == '.')	/* the end of a sentence */
		word--;
	if (word < 20 || strchr("srwgxnA", s[0]) == NULL)
		return 0;
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		m = strlen(keys[i].prefix);
		if (word >= keys[i].min && word <= keys[i].max &&
		    memcmp(s, keys[i].prefix, m) == 0)
			return word;
	}
	return 0;
}

/* A PEM private key at s (a word "-----BEGIN"): [*from, *to) is its
 * base64 body, between the header line's "-----" and the "-----END"
 * that follows (or the end of the text, cut short); the labels stay,
 * so a reader sees what was there. Other PEM blocks (certificates) are
 * public and stay. */
static bool
pem_private_key_at(const unsigned char *s, size_t n, size_t *from,
    size_t *to)
{
	const unsigned char *label, *end;
	size_t i;

	if (n < 16 || memcmp(s, "-----BEGIN ", 11) != 0)
		return false;
	for (i = 11; i + 5 <= n && s[i] != '\n' && memcmp(s + i, "-----",
	    5) != 0; i++)
		;
	if (i + 5 > n || s[i] == '\n')
		return false;
	label = memmem(s + 11, i - 11, "PRIVATE KEY", 11);
	if (label == NULL)
		return false;
	*from = i + 5;
	end = memmem(s + *from, n - *from, "-----END", 8);
	*to = end != NULL ? (size_t)(end - s) : n;
	return *to > *from;
}

/* Whether the `n` characters of an IBAN (letters and digits, country
 * code first) pass its check (ISO 13616: the first four moved to the
 * end, letters as 10..35, mod 97 == 1). */
static bool
iban_valid(const unsigned char *c, size_t n)
{
	unsigned rem = 0;
	size_t i, k;

	for (i = 0; i < n; i++) {
		k = (i + 4) % n;
		if (isdigit(c[k]))
			rem = (rem * 10 + (unsigned)(c[k] - '0')) % 97;
		else
			rem = (rem * 100 + (unsigned)(c[k] - 'A' + 10)) % 97;
	}
	return rem == 1;
}

/* Length of an IBAN at s, written whole (DE89370400440532013000) or in
 * groups of four (DE89 3704 0044 0532 0130 00), or 0: 15 to 34 capital
 * letters and digits, two letters and two digits first, ending a word,
 * that pass the check (so an id of that shape is left alone). The
 * longest that does, when a group of four may be the next word. */
static size_t
iban_at(const unsigned char *s, size_t n)
{
	unsigned char c[34];
	size_t end[34], len = 0, i = 0;

	if (n < 15 || !isupper(s[0]) || !isupper(s[1]) || !isdigit(s[2]) ||
	    !isdigit(s[3]))
		return 0;
	while (i < n && len < sizeof(c)) {
		if (isdigit(s[i]) || isupper(s[i])) {
			c[len] = s[i++];
			end[len++] = i;
		} else if (s[i] == ' ' && len % 4 == 0 && i + 1 < n &&
		    (isdigit(s[i + 1]) || isupper(s[i + 1])))
			i++;
		else
			break;
	}
	for (; len >= 15; len--)
		if ((end[len - 1] == n || !isalnum(s[end[len - 1]])) &&
		    iban_valid(c, len))
			return end[len - 1];
	return 0;
}

/* Whether the `n` digits (0..9) pass the Luhn check of payment cards. */
static bool
luhn_valid(const unsigned char *d, size_t n)
{
	unsigned sum = 0, v;
	size_t i;

	for (i = 0; i < n; i++) {
		v = d[n - 1 - i];
		if (i % 2 == 1 && (v *= 2) > 9)
			v -= 9;
		sum += v;
	}
	return sum % 10 == 0;
}

/* Length of a payment card number at s, or 0: 13 to 19 digits, the
 * first 2 to 6 (as the networks' numbers begin: not a timestamp in
 * milliseconds), whole or in groups of 3 to 6 with one space or dash
 * between them (the same all through: 4111 1111 1111 1111,
 * 3782-822463-10005), ending a word, that pass the Luhn check. The
 * longest that does, when a group may be the next word. Whatever
 * log.mask_digits_min says. */
static size_t
card_at(const unsigned char *s, size_t n)
{
	unsigned char d[19], sep = 0;
	size_t i = 0, nd = 0, g, k, found = 0;

	if (s[0] < '2' || s[0] > '6')
		return 0;
	for (;;) {
		for (g = 0; i + g < n && isdigit(s[i + g]); g++)
			;
		if (g < 3 || nd + g > sizeof(d) || (g > 6 && (nd > 0 ||
		    g < 13)))
			break;
		for (k = 0; k < g; k++)
			d[nd++] = (unsigned char)(s[i + k] - '0');
		i += g;
		if (nd >= 13 && (i == n || !isalnum(s[i])) && luhn_valid(d, nd))
			found = i;
		if (g > 6 || i + 1 >= n || (s[i] != ' ' && s[i] != '-') ||
		    (sep != 0 && s[i] != sep) || !isdigit(s[i + 1]))
			break;
		sep = s[i++];
	}
	return found;
}

static unsigned char
lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c + ('a' - 'A')) : c;
}

static uint32_t
letter_bit(unsigned char c)
{
	c = lower(c);
	return 1u << (c >= 'a' && c <= 'z' ? c - 'a' : 31);
}

uint32_t
dlq_redact_key_starts(const struct dlq_strlist *keys)
{
	uint32_t starts = 0;
	size_t i;

	for (i = 0; keys != NULL && i < keys->n; i++)
		starts |= letter_bit((unsigned char)keys->v[i][0]);
	return starts;
}

static bool
key_is_masked(const struct dlq_redact *r, const unsigned char *k, size_t n)
{
	uint32_t starts;
	size_t i, j, m;
	const char *w;
	unsigned char c;

	if (r->keys == NULL)
		return false;
	starts = r->key_starts != 0 ? r->key_starts :
	    dlq_redact_key_starts(r->keys);
	for (j = 0; j < n; j++) {
		if (!(starts & letter_bit(k[j])))
			continue;
		c = lower(k[j]);
		for (i = 0; i < r->keys->n; i++) {
			w = r->keys->v[i];
			if (lower((unsigned char)w[0]) == c &&
			    (m = strlen(w)) > 0 && m <= n - j &&
			    strncasecmp((const char *)k + j, w, m) == 0)
				return true;
		}
	}
	return false;
}

/* Ends a secret's value written after its key in text: blanks,
 * separators of query strings, lists and headers, quotes, brackets. */
static bool
value_stop(unsigned char c)
{
	return isspace(c) || c == '&' || c == ';' || c == ',' || c == '"' ||
	    c == '\'' || c == ')' || c == ']' || c == '}' || c == '<' ||
	    c == '>' || c == '|';
}

/* The end of a bare value starting at k: the first stop (value_stop).
 * A backslash ends it only where it escapes a quote or a control
 * character of a JSON string (\" \n \u0026); \\ and any other one
 * (ab\cd) belong to the value, so the rest of it is not let out. */
static size_t
bare_end(const unsigned char *s, size_t n, size_t k)
{
	while (k < n && !value_stop(s[k])) {
		if (s[k] != '\\')
			k++;
		else if (k + 1 >= n || strchr("\"'nrtbfu", s[k + 1]) != NULL)
			break;
		else
			k += 2;
	}
	return k;
}

/* Skips an opening or closing quote at s: ", ' or \" (a quote inside a
 * JSON string). Returns its length, 0 when none. */
static size_t
quote_len(const unsigned char *s, size_t n)
{
	if (n > 0 && (s[0] == '"' || s[0] == '\''))
		return 1;
	return n > 1 && s[0] == '\\' && s[1] == '"' ? 2 : 0;
}

/* How far past an apostrophe within a word quoted_end looks for the
 * one that closes a single-quoted value. */
#define APOSTROPHE_REACH 128

/* The end of a quoted value whose first byte is at k: the first `quote`
 * not escaped by a backslash, so a quote within the value ("pa\"ss")
 * does not end it and let the rest out. `nested`: the value is quoted
 * with \" inside a JSON string, whose own escapes (\\, \") are undone
 * first. An apostrophe followed by a letter or digit ('it's') ends a
 * single-quoted value only when no later one, within APOSTROPHE_REACH
 * bytes, stands before a separator, and the text goes on that far: a
 * value cut short ('it's, an error text cut at its limit) is masked to
 * the end. Unterminated: the end of the text. */
static size_t
quoted_end(const unsigned char *s, size_t n, size_t k, unsigned char quote,
    bool nested)
{
	bool escaped = false;
	size_t t, first = n;

	for (; k < n && (first == n || k - first <= APOSTROPHE_REACH);
	    k += t) {
		t = nested && s[k] == '\\' && k + 1 < n ? 2 : 1;
		if (escaped)
			escaped = false;
		else if (s[k + t - 1] == '\\')
			escaped = true;
		else if (s[k + t - 1] == quote) {
			if (quote != '\'' || nested || k + 1 >= n ||
			    !isalnum(s[k + 1]))
				return k;
			if (first == n)
				first = k;
		}
	}
	return k >= n ? n : first;
}

/* Whether s[k] opens a JSON object: a '{' and, after blanks, the quote
 * of its first key (" or, inside a JSON string, \"); `plain`: " only. */
static bool
object_at(const unsigned char *s, size_t n, size_t k, bool plain)
{
	if (k >= n || s[k] != '{')
		return false;
	while (++k < n && isspace(s[k]))
		;
	return plain ? k < n && s[k] == '"' : k < n && s[k] != '\'' &&
	    quote_len(s + k, n - k) > 0;
}

/* The end of the JSON object whose '{' is at s[k] (just after its
 * closing brace), its strings skipped whole, quoted with " or, inside a
 * JSON string, with \"; 0 when the text ends first. */
static size_t
object_end(const unsigned char *s, size_t n, size_t k)
{
	size_t depth = 0, q;

	while (k < n) {
		if ((q = quote_len(s + k, n - k)) > 0 && s[k + q - 1] == '"') {
			k = quoted_end(s, n, k + q, '"', q == 2) + q;
			continue;
		}
		if (s[k] == '{')
			depth++;
		else if (s[k] == '}' && --depth == 0)
			return k + 1;
		k++;
	}
	return 0;
}

/* An authentication scheme written before a credential. */
static size_t
scheme_len(const unsigned char *s, size_t n)
{
	static const char *const schemes[] = { "bearer ", "basic ", "digest ",
	    "token ", NULL };
	const char *const *w;
	size_t m;

	for (w = schemes; *w != NULL; w++)
		if ((m = strlen(*w)) < n && strncasecmp((const char *)s, *w,
		    m) == 0 && !value_stop(s[m]))
			return m;
	return 0;
}

/* Length of an HTTP Basic credential at s, base64 of "user:password"
 * (printable, with its colon), or 0: "Basic dXNlcjpwYXNz" is one
 * wherever it stands, "basic checks failed" is prose. */
static size_t
basic_credential_len(const unsigned char *s, size_t n)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t len = 0, i;
	uint32_t acc = 0;
	int bits = 0;
	bool colon = false;
	unsigned char c;

	while (len < n && s[len] != '\0' && strchr(b64, s[len]) != NULL)
		len++;
	for (i = 0; i < len; i++) {
		acc = acc << 6 | (uint32_t)(strchr(b64, s[i]) - b64);
		if ((bits += 6) >= 8) {
			c = (unsigned char)(acc >> (bits -= 8));
			if (c < 0x20 || c > 0x7e)
				return 0;
			colon |= c == ':';
		}
	}
	while (len < n && s[len] == '=' && (len + 1) % 4 != 1)
		len++;
	return colon && len >= 8 && len % 4 == 0 ? len : 0;
}

/* Whether s[k..] is a percent-encoded byte (%3D), and which ("3d"). */
static bool
encoded_at(const unsigned char *s, size_t n, size_t k, const char *hex)
{
	return k + 2 < n && s[k] == '%' && lower(s[k + 1]) == hex[0] &&
	    lower(s[k + 2]) == hex[1];
}

/* A secret in a percent-encoded query string inside the word of `word`
 * bytes at s (a URL passed as a parameter: next=https%3A%2F%2Fapp%2F
 * %3Ftoken%3Dabc%26x%3D1): a key between encoded bytes that holds a mask
 * key, then %3D (=) or %3A (:), loses its value up to an encoded &, ;
 * or blank, or a stop (value_stop) of the n bytes at s. Sets [*from,
 * *to) as secret_at. */
static bool
encoded_secret_at(const struct dlq_redact *r, const unsigned char *s,
    size_t word, size_t n, size_t *from, size_t *to)
{
	size_t k, key = 0;

	for (k = 0; k < word; k++) {
		if (s[k] != '%')
			continue;
		if ((encoded_at(s, word, k, "3d") || encoded_at(s, word, k,
		    "3a")) && k > key && key_is_masked(r, s + key, k - key))
			break;
		key = k + 3;	/* the next key starts after this byte */
	}
	if (k >= word)
		return false;
	for (*from = *to = k + 3; *to < n && !value_stop(s[*to]) &&
	    !encoded_at(s, n, *to, "26") && !encoded_at(s, n, *to, "3b") &&
	    !encoded_at(s, n, *to, "20"); (*to)++)
		;
	return *to > *from;
}

/* A secret in text at the word of `word` bytes at s: the value of a
 * masked key (token=abc, "password": "x y", Authorization: Bearer abc)
 * or the credential after "Bearer ". Sets [*from, *to) to what is
 * masked (after a scheme, which stays; a password hash's {SSHA} is part
 * of its value, a JSON object is one whole). After "key: " a bare value is
 * prose unless it holds a digit or is 16 bytes or longer ("password:
 * must be longer" stays readable). */
static bool
secret_at(const struct dlq_redact *r, const unsigned char *s, size_t word,
    size_t n, size_t *from, size_t *to)
{
	size_t j = word, q, sch, k, e;
	bool colon, spaced, digit = false;

	if (encoded_secret_at(r, s, word, n, from, to))
		return true;
	if (word == 6 && n > 7 && strncasecmp((const char *)s, "bearer ",
	    7) == 0) {
		*to = k = bare_end(s, n, *from = 7);
		return k > *from;
	}
	if (word == 5 && n > 6 && strncasecmp((const char *)s, "basic ",
	    6) == 0 && (k = basic_credential_len(s + 6, n - 6)) > 0) {
		*from = 6;
		*to = 6 + k;
		return true;
	}
	j += quote_len(s + j, n - j);
	while (j < n && (s[j] == ' ' || s[j] == '\t'))
		j++;
	if (j >= n || (s[j] != '=' && s[j] != ':') ||
	    !key_is_masked(r, s, word))
		return false;
	colon = s[j++] == ':';
	spaced = j < n && (s[j] == ' ' || s[j] == '\t');
	while (j < n && (s[j] == ' ' || s[j] == '\t'))
		j++;
	if ((q = quote_len(s + j, n - j)) > 0) {	/* up to its quote */
		*from = j + q;
		*to = quoted_end(s, n, *from, s[j + q - 1], q == 2);
		return *to > *from;
	}
	if (object_at(s, n, j, false)) {
		*from = j;	/* an object: all of it, to the end if cut */
		if ((*to = object_end(s, n, j)) == 0)
			*to = n;
		return true;
	}
	sch = scheme_len(s + j, n - j);
	*from = k = j + sch;
	if (k < n && s[k] == '{') {	/* a hash's scheme: {SSHA}abc */
		for (e = k + 1; e < n && isalnum(s[e]); e++)
			;
		if (e < n && s[e] == '}')
			k = e + 1;
	}
	if (colon && word >= 6 && strncasecmp((const char *)s + word - 6,
	    "cookie", 6) == 0) {	/* a header: every cookie of its line */
		while (k < n && !strchr("\r\n\"\\", s[k]))
			k++;
		*to = k;
		return k > *from;
	}
	*to = bare_end(s, n, k);
	if (*to == *from)
		return false;
	for (k = *from; k < *to; k++)
		digit |= isdigit(s[k]) != 0;
	return !colon || !spaced || sch > 0 || digit || k - *from >= 16;
}

/* A generic name/value pair names its secret in a value, not a key:
 * {"name": "password", "value": "x"}, <field name="password">x</field>
 * (form fields, header lists, parameters). The "value" member of an
 * object whose name member holds a mask key is masked as if its key were
 * that name; so are the text and the value attribute of such an
 * element. */
static const char *const name_keys[] = { "name", "key", "field", "header",
    "param", "parameter", "attribute", "property", NULL };
static const char *const value_keys[] = { "value", "values", NULL };
/* How far the members after a "value" are read for their name. */
#define PAIR_AHEAD	1024

/* Whether the key of `n` bytes at s is one of `words` (any case). */
static bool
key_is(const unsigned char *s, size_t n, const char *const *words)
{
	for (; *words != NULL; words++)
		if (strlen(*words) == n && strncasecmp((const char *)s, *words,
		    n) == 0)
			return true;
	return false;
}

/* How far a start tag's attributes are looked through for its '>'. */
#define TAG_MAX		256

/* An element whose text or value attribute is masked. */
struct element {
	size_t	 from, to;	/* its text, from just past its start tag
				 * (from == to: none masked) */
	size_t	 vfrom, vto;	/* its value attribute's value, or 0, 0 */
};

/* Walks the attributes of a start tag, s[j..gt): whether one of
 * name_keys holds a mask key (name="password"); the value of its value
 * attribute (value="x") goes into [*vfrom, *vto). */
static bool
attributes(const struct dlq_redact *r, const unsigned char *s, size_t j,
    size_t gt, size_t *vfrom, size_t *vto)
{
	size_t name, len, v;
	bool named = false;

	while (j < gt) {
		if (!local_char(s[j]) && s[j] != ':') {
			j++;
			continue;
		}
		for (name = j; j < gt && (local_char(s[j]) || s[j] == ':'); j++)
			;
		len = j - name;
		while (j < gt && isspace(s[j]))
			j++;
		if (j >= gt || s[j] != '=')
			continue;
		for (j++; j < gt && isspace(s[j]); j++)
			;
		if (j >= gt || (s[j] != '"' && s[j] != '\''))
			continue;
		for (v = ++j; j < gt && s[j] != s[v - 1]; j++)
			;
		if (key_is(s + name, len, name_keys) && key_is_masked(r,
		    s + v, j - v))
			named = true;
		else if (key_is(s + name, len, value_keys) && j > v) {
			*vfrom = v;
			*vto = j;
		}
		j++;
	}
	return named;
}

/* An XML element that holds a secret (a SOAP or XML payload): named
 * after a mask key (<password>x</password>, <ns:Token t="1">x</ns:Token>)
 * or by a name attribute (<field name="password">x</field>, <param
 * name="token" value="x"/>). s[i] begins a word of `word` bytes right
 * after '<' or after '<prefix:'. Sets *e to what is masked: its text up
 * to the next tag, or its CDATA section, and its value attribute. False
 * when there is neither; a text that runs to the end of a text not
 * `cut` is no element's, but prose ("expected <token> here"). */
static bool
element_at(const struct dlq_redact *r, const unsigned char *s, size_t i,
    size_t word, size_t n, bool cut, struct element *e)
{
	size_t lt = i - 1, j = i + word, k;
	bool blank = true;

	if (j >= n || !(s[j] == '>' || s[j] == '/' || isspace(s[j])))
		return false;
	if (s[lt] == ':') {		/* after a namespace prefix */
		while (lt > 0 && local_char(s[lt - 1]))
			lt--;
		if (lt == i - 1 || lt == 0)
			return false;
		lt--;
	}
	if (s[lt] != '<')
		return false;
	for (k = j; k < n && k - j < TAG_MAX && s[k] != '>'; k++)
		;
	if (k >= n || s[k] != '>')
		return false;
	e->vfrom = e->vto = 0;
	if (!attributes(r, s, j, k, &e->vfrom, &e->vto) &&
	    !key_is_masked(r, s + i, word))
		return false;
	e->from = e->to = k + 1;
	if (s[k - 1] != '/') {		/* not <token/> */
		k++;
		if (n - k >= 9 && memcmp(s + k, "<![CDATA[", 9) == 0) {
			for (k += 9; k + 3 <= n && memcmp(s + k, "]]>", 3) !=
			    0; k++)
				;
			e->to = k + 3 <= n ? k + 3 : n;
		} else {
			for (; k < n && s[k] != '<'; k++)
				blank &= isspace(s[k]) != 0;
			if (!blank && (k < n || cut))
				e->to = k;
		}
	}
	return e->to > e->from || e->vto > e->vfrom;
}

/* The credential in a URL's user information, at s just after "://"
 * (redis://app:s3cret@cache:6379, https://ghp_x@github.com): sets
 * [*from, *to) to the password, after the first ':' up to the '@' that
 * ends the user information, or to the whole user information when it
 * has no ':' (a token given as the user name). The host and port stay,
 * as dlq-worker prints its own broker URL. */
static bool
url_credential_at(const unsigned char *s, size_t n, size_t *from, size_t *to)
{
	size_t i, at = 0, colon = 0;
	bool seen_at = false, seen_colon = false;

	for (i = 0; i < n && !isspace(s[i]) && s[i] != '/' && s[i] != '?' &&
	    s[i] != '#' && s[i] != '"' && s[i] != '\'' && s[i] != '\\' &&
	    s[i] != '<' && s[i] != '>'; i++)
		if (s[i] == '@') {
			at = i;		/* the last one: a raw '@' in a password */
			seen_at = true;
		} else if (s[i] == ':' && !seen_colon && !seen_at) {
			colon = i;
			seen_colon = true;
		}
	if (!seen_at)
		return false;
	*from = seen_colon ? colon + 1 : 0;
	*to = at;
	return *to > *from;
}

static bool redact_json(const struct dlq_redact *, const unsigned char *,
    size_t, struct dlq_buf *, size_t);

/* A whole JSON object written in text at s, of n bytes ("failed for
 * {"name": "password", "value": "x"}"): masked as a JSON payload is, its
 * keys and name/value pairs known as such. */
static void
mask_json_in_text(const struct dlq_redact *r, const unsigned char *s,
    size_t n, struct dlq_buf *out)
{
	struct dlq_redact whole = *r;	/* the text's own limit cuts it */

	whole.max_bytes = SIZE_MAX / 2;
	redact_json(&whole, s, n, out, out->len);
}

/* Masks the n bytes at s into out; `cut`: the text goes on past them. */
static void
mask_text(const struct dlq_redact *r, const unsigned char *s, size_t n,
    bool cut, struct dlq_buf *out)
{
	size_t i = 0, run = 0, k, word, from, to;
	struct element e;
	bool objects = true;	/* none was cut: each scan is of new text */

	while (i < n) {		/* at the start of a word */
		/* a JSON object, whole (a cut one, and all after it, by
		 * their parts as text) */
		if (objects && object_at(s, n, i, true)) {
			if ((k = object_end(s, n, i)) > 0) {
				dlq_buf_add(out, s + run, i - run);
				mask_json_in_text(r, s + i, k - i, out);
				i = run = k;
				continue;
			}
			objects = false;
		}
		word = local_len(s + i, n - i);
		if (word > 0 && i > 0 && (s[i - 1] == '<' || s[i - 1] == ':') &&
		    element_at(r, s, i, word, n, cut, &e)) {
			dlq_buf_add(out, s + run, i - run);
			/* its name and attributes, masked as any text */
			if (e.vto > e.vfrom) {
				mask_text(r, s + i, e.vfrom - i, false, out);
				dlq_buf_adds(out, MASK);
				mask_text(r, s + e.vto, e.from - e.vto, false,
				    out);
			} else
				mask_text(r, s + i, e.from - i, false, out);
			if (e.to > e.from)
				dlq_buf_adds(out, MASK);
			i = run = e.to;
			continue;	/* at a tag or the end */
		}
		if (word > 0 && secret_at(r, s + i, word, n - i, &from, &to)) {
			/* a card number or an IBAN in groups goes on past
			 * the blank that ends a value: card=4111 1111 ... */
			if ((k = card_at(s + i + from, n - i - from)) == 0)
				k = iban_at(s + i + from, n - i - from);
			if (k > to - from)
				to = from + k;
			dlq_buf_add(out, s + run, i + from - run);
			dlq_buf_adds(out, MASK);
			i += to;
			run = i;
			continue;	/* a stop: not the start of a word */
		}
		/* at a line's start, which in a JSON string follows "\n" */
		k = s[i] == 'n' && i > 0 && s[i - 1] == '\\' && i + 1 < n ?
		    1 : 0;
		if (s[i + k] == '-' && pem_private_key_at(s + i + k, n - i - k,
		    &from, &to)) {
			from += k;
			to += k;
			dlq_buf_add(out, s + run, i + from - run);
			dlq_buf_adds(out, MASK);
			i += to;
			run = i;
			continue;	/* at its "-----END" */
		}
		if (word > 0 && n - i - word > 3 &&
		    memcmp(s + i + word, "://", 3) == 0 &&
		    url_credential_at(s + i + word + 3, n - i - word - 3,
		    &from, &to)) {
			dlq_buf_add(out, s + run, i + word + 3 + from - run);
			dlq_buf_adds(out, MASK);
			i += word + 3 + to;
			run = i;
			continue;	/* at the '@' before the host */
		}
		k = 0;
		if (r->emails)
			k = email_at(s + i, word, n - i);
		if (k == 0 && r->digits_min > 0 &&
		    (isdigit(s[i]) || s[i] == '+'))
			k = digits_at(s + i, n - i, r->digits_min);
		if (k == 0 && isdigit(s[i]))
			k = card_at(s + i, n - i);
		if (k == 0 && r->digits_min > 0 && isdigit(s[i]))
			k = grouped_digits_at(s + i, n - i, r->digits_min,
			    i > 0 && s[i - 1] == '(');
		if (k == 0 && s[i] == 'e')
			k = jwt_at(s + i, word);
		if (k == 0)
			k = service_key_at(s + i, word);
		if (k == 0 && isupper(s[i]))
			k = iban_at(s + i, n - i);
		if (k > 0) {
			dlq_buf_add(out, s + run, i - run);
			dlq_buf_adds(out, MASK);
			i += k;
			run = i;
			/* the rest of its word cannot start another */
			i += local_len(s + i, n - i);
		} else
			i += word;
		/* nor the character that ends a word: addresses and numbers
		 * start with a local-part character */
		if (i < n)
			i++;
	}
	dlq_buf_add(out, s + run, n - run);
}

void
dlq_redact_text(const struct dlq_redact *r, const void *p, size_t n,
    size_t max, struct dlq_buf *out)
{
	size_t start = out->len;
	bool cut = n > max + LOOKAHEAD;

	if (cut)
		n = max + LOOKAHEAD;
	mask_text(r, p, n, cut, out);
	if (out->len - start > max) {
		out->len = start + dlq_utf8_prefix(out->data + start, max);
		out->data[out->len] = '\0';
	}
}

/* End of the JSON string whose opening quote is at s[0]: index just past
 * the closing quote, or n when unterminated. */
static size_t
string_end(const unsigned char *s, size_t n)
{
	size_t i = 1;

	while (i < n) {
		i += dlq_json_plain_len(s + i, n - i);	/* no quote in it */
		if (i >= n)
			break;
		if (s[i] == '\\')
			i += 2;
		else if (s[i++] == '"')
			return i;
	}
	return n;
}

/* End of the JSON value starting at s[0] (scalar or whole container). */
static size_t
value_end(const unsigned char *s, size_t n)
{
	size_t i = 0;
	int depth = 0;

	if (s[0] == '"')
		return string_end(s, n);
	if (s[0] != '{' && s[0] != '[') {
		while (i < n && s[i] != ',' && s[i] != '}' && s[i] != ']' &&
		    !isspace(s[i]))
			i++;
		return i;
	}
	while (i < n) {
		switch (s[i]) {
		case '"':
			i += string_end(s + i, n - i);
			continue;
		case '{': case '[':
			depth++;
			break;
		case '}': case ']':
			if (--depth == 0)
				return i + 1;
			break;
		}
		i++;
	}
	return n;
}

/* Whether the rest of an object, from just after a "value" key at s,
 * has a name member holding a mask key: {"value": "x", "name": "token"}.
 * Reads at most PAIR_AHEAD bytes and stops at the object's end. */
static bool
secret_named_ahead(const struct dlq_redact *r, const unsigned char *s,
    size_t n)
{
	size_t i = 0, k;
	bool key = false, named = false;

	if (n > PAIR_AHEAD)
		n = PAIR_AHEAD;
	while (i < n) {
		if (isspace(s[i]) || s[i] == ':') {
			i++;
			continue;
		}
		if (s[i] == '}' || s[i] == ']')
			return false;
		if (s[i] == ',') {
			key = true;
			i++;
			continue;
		}
		if (s[i] == '"') {
			k = string_end(s + i, n - i);
			if (k < 2 || s[i + k - 1] != '"')
				return false;
			if (key)
				named = key_is(s + i + 1, k - 2, name_keys);
			else if (named && key_is_masked(r, s + i + 1, k - 2))
				return true;
			else
				named = false;
			key = false;
			i += k;
			continue;
		}
		k = value_end(s + i, n - i);	/* a number, an object ... */
		i += k > 0 ? k : 1;
		key = named = false;
	}
	return false;
}

static bool
redact_json(const struct dlq_redact *r, const unsigned char *s, size_t n,
    struct dlq_buf *out, size_t start)
{
	uint64_t is_obj = 0;	/* bit d set: depth d is an object */
	uint64_t named = 0;	/* bit d: its name member holds a mask key */
	int depth = 0;
	bool expect_key = false, mask_next = false, name_next = false;
	size_t i = 0, k, len, budget;

	while (i < n) {
		if (out->len - start >= r->max_bytes)
			return true;
		unsigned char c = s[i];
		if (isspace(c)) {
			dlq_buf_addc(out, (char)c);
			i++;
			continue;
		}
		if (mask_next && c != ':' && c != ',' && c != '}' && c != ']') {
			i += value_end(s + i, n - i);
			dlq_buf_adds(out, "\"" MASK "\"");
			mask_next = false;
			continue;
		}
		switch (c) {
		case '{': case '[':
			if (++depth >= MAX_DEPTH)
				return true;
			if (c == '{')
				is_obj |= (uint64_t)1 << depth;
			else
				is_obj &= ~((uint64_t)1 << depth);
			named &= ~((uint64_t)1 << depth);
			expect_key = c == '{';
			name_next = false;
			dlq_buf_addc(out, (char)c);
			i++;
			continue;
		case '}': case ']':
			if (depth > 0)
				depth--;
			expect_key = false;
			dlq_buf_addc(out, (char)c);
			i++;
			continue;
		case ',':
			expect_key = (is_obj >> depth) & 1;
			dlq_buf_addc(out, (char)c);
			i++;
			continue;
		case ':':
			expect_key = false;
			dlq_buf_addc(out, (char)c);
			i++;
			continue;
		case '"':
			k = string_end(s + i, n - i);
			len = k >= 2 ? k - 2 : 0;
			if (expect_key) {
				mask_next = key_is_masked(r, s + i + 1, len);
				name_next = !mask_next &&
				    key_is(s + i + 1, len, name_keys);
				if (!mask_next && key_is(s + i + 1, len,
				    value_keys))
					mask_next = ((named >> depth) & 1) ||
					    secret_named_ahead(r, s + i + k,
					    n - i - k);
				dlq_buf_add(out, s + i, k);
			} else {
				if (name_next && key_is_masked(r, s + i + 1,
				    len))
					named |= (uint64_t)1 << depth;
				name_next = false;
				budget = r->max_bytes - (out->len - start) +
				    LOOKAHEAD;
				mask_text(r, s + i, k < budget ? k : budget,
				    k > budget, out);
			}
			expect_key = false;
			i += k;
			continue;
		default:
			k = value_end(s + i, n - i);
			if (k == 0)
				k = 1;
			dlq_buf_add(out, s + i, k);
			i += k;
			name_next = false;
			continue;
		}
	}
	return false;
}

enum dlq_payload_kind
dlq_redact_payload(const struct dlq_redact *r, const void *p, size_t n,
    struct dlq_buf *out, bool *truncated)
{
	const unsigned char *s = p;
	size_t start = out->len, i = 0, scan;
	enum dlq_payload_kind kind;

	*truncated = false;
	if (n == 0)
		return DLQ_PAYLOAD_EMPTY;
	/* Judge text by what would be printed, not by the whole body. */
	scan = n < r->max_bytes + LOOKAHEAD ? n : r->max_bytes + LOOKAHEAD;
	if (!dlq_utf8_is_text(s, dlq_utf8_prefix(s, scan)))
		return DLQ_PAYLOAD_BINARY;
	while (i < n && isspace(s[i]))
		i++;
	if (i < n && (s[i] == '{' || s[i] == '[')) {
		kind = DLQ_PAYLOAD_JSON;
		*truncated = redact_json(r, s, n, out, start);
	} else {
		kind = DLQ_PAYLOAD_TEXT;
		mask_text(r, s, scan, scan < n, out);
		*truncated = scan < n;
	}
	if (out->len - start > r->max_bytes) {
		out->len = start + dlq_utf8_prefix(out->data + start,
		    r->max_bytes);
		if (out->data != NULL)
			out->data[out->len] = '\0';
		*truncated = true;
	}
	return kind;
}
