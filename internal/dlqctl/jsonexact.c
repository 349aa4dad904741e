/* jsonexact.c - whole numbers through cJSON without rounding. */
#include "jsonexact.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* An integer literal of this many digits may be past 2^53 (16 digits) */
#define LONG_INTEGER	16

struct tokens {
	const char	*text;
	size_t		 n;
	size_t		 at;		/* where the next number is looked for */
};

/* Where the string opened by the quote at s[i] ends (past its closing
 * quote, or n): a quote after an even run of backslashes closes it. A
 * replay's answer is mostly strings (base64 bodies): memchr, not a loop
 * of its own, walks them. */
static size_t
string_end(const char *s, size_t i, size_t n)
{
	const char *q;
	size_t b;

	for (i++; i < n; i = (size_t)(q - s) + 1) {
		if ((q = memchr(s + i, '"', n - i)) == NULL)
			return n;
		for (b = 0; q - b > s + i && q[-1 - (ptrdiff_t)b] == '\\'; b++)
			;
		if (b % 2 == 0)
			return (size_t)(q - s) + 1;
	}
	return n;
}

static bool
in_number(char c)
{
	return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' ||
	    c == '+' || c == '-';
}

/* The next number literal of the text, outside strings (where only a
 * number has a digit or a '-'): its start and length; false at the end. */
static bool
next_number(struct tokens *t, size_t *start, size_t *len)
{
	const char *s = t->text;
	size_t i = t->at, k;

	while (i < t->n) {
		if (s[i] == '"') {
			i = string_end(s, i, t->n);
			continue;
		}
		if (s[i] == '-' || (s[i] >= '0' && s[i] <= '9')) {
			for (k = i + 1; k < t->n && in_number(s[k]); k++)
				;
			*start = i;
			*len = k - i;
			t->at = k;
			return true;
		}
		i++;
	}
	t->at = i;
	return false;
}

/* An integer (no fraction or exponent) of LONG_INTEGER digits or more */
static bool
long_integer(const char *s, size_t n)
{
	size_t i = s[0] == '-';

	if (n - i < LONG_INTEGER)
		return false;
	for (; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* Keeps the literal s[0..n) in `item`: false on no memory. */
static bool
keep_literal(cJSON *item, const char *s, size_t n)
{
	if ((item->valuestring = malloc(n + 1)) == NULL)
		return false;
	memcpy(item->valuestring, s, n);
	item->valuestring[n] = '\0';
	return true;
}

/* Pairs the number `item` with the text's next one, or the numbers of
 * its children in order; false when they do not match. */
static bool
keep(cJSON *item, struct tokens *t)
{
	cJSON *c;
	size_t start, len;

	if (cJSON_IsNumber(item)) {
		if (!next_number(t, &start, &len))
			return false;
		return !long_integer(t->text + start, len) ||
		    item->valuestring != NULL ||
		    keep_literal(item, t->text + start, len);
	}
	for (c = item->child; c != NULL; c = c->next)
		if ((cJSON_IsNumber(c) || cJSON_IsArray(c) ||
		    cJSON_IsObject(c)) && !keep(c, t))
			return false;
	return true;
}

/* Drops every literal kept in `item` and below. */
static void
forget(cJSON *item)
{
	cJSON *c;

	if (cJSON_IsNumber(item)) {
		free(item->valuestring);
		item->valuestring = NULL;
	}
	for (c = item->child; c != NULL; c = c->next)
		forget(c);
}

bool
dlq_json_keep_integers(cJSON *tree, const char *text, size_t n)
{
	struct tokens t = { text, n, 0 };
	size_t start, len;

	if (tree == NULL)
		return false;
	/* every number of the tree paired, and none left in the text */
	if (keep(tree, &t) && !next_number(&t, &start, &len))
		return true;
	forget(tree);	/* none of them can be trusted */
	return false;
}

const char *
dlq_json_literal(const cJSON *item)
{
	return cJSON_IsNumber(item) ? item->valuestring : NULL;
}

/* Turns the kept numbers of `item` (itself included) into raw text. */
static void
as_raw(cJSON *item)
{
	cJSON *c;

	if (cJSON_IsNumber(item) && item->valuestring != NULL)
		item->type = (item->type & ~0xFF) | cJSON_Raw;
	for (c = item->child; c != NULL; c = c->next)
		as_raw(c);
}

char *
dlq_json_print(const cJSON *v)
{
	cJSON *copy = cJSON_Duplicate(v, true);
	char *text;

	if (copy == NULL)
		return NULL;
	as_raw(copy);
	text = cJSON_PrintUnformatted(copy);
	cJSON_Delete(copy);
	return text;
}
