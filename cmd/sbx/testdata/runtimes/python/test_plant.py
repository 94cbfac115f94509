import ctypes
import os
import socket
import unittest
from urllib.parse import urlsplit

CLONE_NEWUSER = 0x10000000


def proxy_get(url):
    """Asks the HTTP proxy in HTTP_PROXY for url; returns the status code."""
    proxy = urlsplit(os.environ["HTTP_PROXY"])
    with socket.create_connection((proxy.hostname, proxy.port)) as c:
        host = urlsplit(url).netloc
        c.sendall(f"GET {url} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        head = c.recv(4096).decode()
    return int(head.split(" ")[1])


class Plant(unittest.TestCase):
    def test_arithmetic(self):
        self.assertEqual(1 + 1, 2)

    def test_planted_refusal(self):
        plant = os.environ.get("SBX_PLANT", "")
        if plant == "read":
            with self.assertRaises(OSError):
                open(os.environ["SBX_PLANT_PATH"]).read()
        elif plant == "net":
            self.assertEqual(proxy_get(os.environ["SBX_PLANT_URL"]), 403)
        elif plant == "unshare":
            libc = ctypes.CDLL(None, use_errno=True)
            self.assertEqual(libc.unshare(CLONE_NEWUSER), -1)


if __name__ == "__main__":
    unittest.main()
