/* check_file.h - a file of the source tree read whole, for the tests
 * that keep documentation in step with the code. Run from the top
 * directory (make test does). */
#ifndef DLQ_CHECK_FILE_H
#define DLQ_CHECK_FILE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

/* NUL-terminated; the caller frees it. */
static inline char *
check_slurp(const char *file)
{
	FILE *f = fopen(file, "r");
	char *text;
	long n;

	ck_assert_msg(f != NULL, "%s: run the tests from the top directory",
	    file);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	ck_assert_int_gt(n = ftell(f), 0);
	rewind(f);
	ck_assert_ptr_nonnull(text = malloc((size_t)n + 1));
	ck_assert_uint_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	text[n] = '\0';
	fclose(f);
	return text;
}

#endif
