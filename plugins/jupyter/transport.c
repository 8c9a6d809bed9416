/* plugins/jupyter/transport.c: a connection's requests, on the transport
 * it has (kernel-private.h: jk_transport). */
#include "config.h"

#include "plugins/jupyter/kernel-private.h"

static const jk_transport *
transport_of(const jk_kernel *kernel)
{
  return kernel->transport != NULL ? kernel->transport : &jk_zmq_transport;
}

jk_exec_outcome
jk_kernel_execute(jk_kernel *kernel, jk_exec *exec)
{
  return transport_of(kernel)->execute(kernel, exec);
}

char *
jk_kernel_stdin_exchange(jk_kernel *kernel, const char *msg_id, const char *value, double timeout,
                         GError **error)
{
  return transport_of(kernel)->stdin_exchange(kernel, msg_id, value, timeout, error);
}

gboolean
jk_kernel_interrupt(jk_kernel *kernel, GError **error)
{
  return transport_of(kernel)->interrupt(kernel, error);
}
