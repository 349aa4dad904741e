/* check_ctlhelp.c - dlqctl's help texts and dlqctl(8) say the same:
 * every command `dlqctl help` knows has an entry in the man page's
 * COMMANDS, naming each option its help text names, and every entry
 * there is a command dlqctl knows. */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check_file.h"
#include "../check_main.h"
#include "ctlhelp.h"

/* The man page's COMMANDS section (a copy; the caller frees it). */
static char *
commands_section(void)
{
	char *man = check_slurp("man/dlqctl.8"), *at, *end, *copy;

	ck_assert_msg((at = strstr(man, "\n.SH COMMANDS\n")) != NULL,
	    "man/dlqctl.8 has no COMMANDS section");
	if ((end = strstr(at + 1, "\n.SH ")) != NULL)
		*end = '\0';
	ck_assert_ptr_nonnull(copy = strdup(at));
	free(man);
	return copy;
}

/* "--message-id" as man(7) writes it: "\-\-message\-id". */
static void
man_option(const char *opt, size_t len, char *out, size_t size)
{
	size_t i, n = 0;

	for (i = 0; i < len && n + 3 < size; i++) {
		if (opt[i] == '-')
			out[n++] = '\\';
		out[n++] = opt[i];
	}
	out[n] = '\0';
}

/* The text of the entries ".B dlqctl NAME ..." (up to the next .TP,
 * .PP or .SH), all of them joined; "" when there is none. */
static char *
entries_of(const char *section, const char *name)
{
	char tag[96], *out;
	const char *p, *end;
	size_t n = 0, len;

	snprintf(tag, sizeof(tag), "\n.B dlqctl ");
	man_option(name, strlen(name), tag + strlen(tag), sizeof(tag) -
	    strlen(tag));
	ck_assert_ptr_nonnull(out = calloc(1, strlen(section) + 1));
	for (p = section; (p = strstr(p, tag)) != NULL; p += strlen(tag)) {
		if (p[strlen(tag)] != ' ' && p[strlen(tag)] != '\n')
			continue;	/* "replay" is not "replays" */
		end = p + strlen(tag);
		while ((end = strchr(end + 1, '\n')) != NULL &&
		    strncmp(end, "\n.TP", 4) != 0 &&
		    strncmp(end, "\n.PP", 4) != 0)
			;
		len = end != NULL ? (size_t)(end - p) : strlen(p);
		memcpy(out + n, p, len);
		n += len;
	}
	return out;
}

START_TEST(every_command_and_option_of_the_help_is_in_the_man_page)
{
	char *section = commands_section(), *entries, want[96];
	const char *name, *help, *p;
	size_t i, len;
	int options = 0;

	for (i = 0; (name = dlq_ctl_help_command(i)) != NULL; i++) {
		entries = entries_of(section, name);
		ck_assert_msg(entries[0] != '\0', "man/dlqctl.8: no entry for "
		    "'dlqctl %s'", name);
		help = dlq_ctl_help(name);
		for (p = help; (p = strstr(p, "--")) != NULL; p += len) {
			len = 2 + strspn(p + 2, "abcdefghijklmnopqrstuvwxyz-");
			if (len == 2 || (p > help && p[-1] != ' ' &&
			    p[-1] != '(' && p[-1] != '\n'))
				continue;
			man_option(p, len, want, sizeof(want));
			ck_assert_msg(strstr(entries, want) != NULL,
			    "man/dlqctl.8: the entry of 'dlqctl %s' does not "
			    "name %.*s (its help does)", name, (int)len, p);
			options++;
		}
		free(entries);
	}
	ck_assert_int_ge(i, 15);
	ck_assert_int_ge(options, 40);
	free(section);
}
END_TEST

START_TEST(every_command_of_the_man_page_is_one_dlqctl_knows)
{
	char *section = commands_section(), words[2][32], name[72], line[128];
	const char *p;
	size_t i, n;
	int entries = 0;

	for (p = section; (p = strstr(p, "\n.B dlqctl ")) != NULL; p++) {
		/* its words as typed: "\-" is man(7)'s "-" */
		for (i = 11, n = 0; p[i] != '\n' && p[i] != '\0' &&
		    n + 1 < sizeof(line); i++)
			if (p[i] != '\\' || p[i + 1] != '-')
				line[n++] = p[i];
		line[n] = '\0';
		words[1][0] = '\0';
		n = (size_t)sscanf(line, "%31[a-z-] %31[a-z-]", words[0],
		    words[1]);
		ck_assert_uint_ge(n, 1);
		snprintf(name, sizeof(name), "%s %s", words[0], words[1]);
		ck_assert_msg((n == 2 && dlq_ctl_help(name) != NULL) ||
		    dlq_ctl_help(words[0]) != NULL, "man/dlqctl.8 documents "
		    "'dlqctl %s', which dlqctl does not know", words[0]);
		entries++;
	}
	ck_assert_int_ge(entries, 15);
	free(section);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("ctlhelp");
	TCase *tc = tcase_create("man page");

	tcase_add_test(tc, every_command_and_option_of_the_help_is_in_the_man_page);
	tcase_add_test(tc, every_command_of_the_man_page_is_one_dlqctl_knows);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
