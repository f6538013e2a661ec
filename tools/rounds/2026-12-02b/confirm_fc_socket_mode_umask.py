"""A sender listening on unix:PATH (a fresh path in a temporary directory), made under the umask 002 that
user-private-group systems give: the socket file must have mode 0600 (RDV-8); a worker can still join by URL."""
import os
import stat
import tempfile
import threading

import torch
from _confirm import bug, fine, module

ws = module()
os.umask(0o002)
d = tempfile.mkdtemp(prefix="fc-mode-")
path = os.path.join(d, "trainer.sock")
s = ws.Sender({"w": torch.zeros(8)}, 1, listen=f"unix:{path}")
mode = stat.S_IMODE(os.stat(path).st_mode)
r = ws.Receiver(s.url(0))
t = threading.Thread(target=lambda: r.connect(timeout=10), daemon=True)
t.start()
s.connect(timeout=10)
t.join(10)
r.close()
s.close()
try:
    os.rmdir(d)
except OSError:
    pass
if mode != 0o600:
    bug(f"the listening socket {path} has mode {oct(mode)}, not 0600: other users can connect (RDV-8)")
fine("socket file mode 0600")
