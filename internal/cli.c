/* cli.c - start-up steps shared by the two programs. */
#include "cli.h"

#include <stdio.h>

#include "buf.h"
#include "log.h"

int
dlq_cli_load(const char *path, struct dlq_config *c, struct dlq_topology **t)
{
	struct dlq_buf errors;

	dlq_buf_init(&errors);
	*t = NULL;
	if (dlq_config_load(c, path, &errors) == 0)
		*t = dlq_topology_load(c->topology_file, c->dlq_suffix, &errors);
	if (*t == NULL) {
		fputs(errors.data ? errors.data : "cannot load configuration\n",
		    stderr);
		dlq_buf_release(&errors);
		dlq_config_release(c);
		return -1;
	}
	dlq_buf_release(&errors);
	dlq_log_set_level(c->log_level);
	return 0;
}
