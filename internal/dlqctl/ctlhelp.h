/* ctlhelp.h - the help text of each dlqctl command. */
#ifndef DLQ_CTLHELP_H
#define DLQ_CTLHELP_H

#include <stddef.h>

/* What `command` ("replay", "topology show") does and what its options
 * mean, lines ending in '\n', to print after its usage line; NULL for
 * a name that is not a command. */
const char	*dlq_ctl_help(const char *command);
/* The name of the i-th command, from 0; NULL past the last. */
const char	*dlq_ctl_help_command(size_t i);

#endif
