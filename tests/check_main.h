/* check_main.h - the main() every Check test program shares: run the
 * suite, print Check's summary line, exit 0 only when nothing failed. */
#ifndef DLQ_CHECK_MAIN_H
#define DLQ_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

#define DLQ_CHECK_MAIN(suite_fn)					\
int									\
main(void)								\
{									\
	SRunner *sr = srunner_create(suite_fn());			\
	int failed;							\
									\
	srunner_run_all(sr, CK_NORMAL);					\
	failed = srunner_ntests_failed(sr);				\
	srunner_free(sr);						\
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;		\
}

#endif
