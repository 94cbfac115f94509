//! The sbx runtime-matrix fixture: one passing test, and one that makes the
//! refusal SBX_PLANT names (and passes when it is refused).

#[cfg(test)]
mod tests {
    use std::env;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    const CLONE_NEWUSER: i32 = 0x10000000;

    extern "C" {
        fn unshare(flags: i32) -> i32;
    }

    /// Asks the HTTP proxy in HTTP_PROXY for url; returns the status line.
    fn proxy_get(url: &str) -> String {
        let proxy = env::var("HTTP_PROXY").unwrap();
        let addr = proxy.trim_start_matches("http://").trim_end_matches('/');
        let host = url.trim_start_matches("http://").split('/').next().unwrap();
        let mut c = TcpStream::connect(addr).unwrap();
        write!(c, "GET {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", url, host).unwrap();
        let mut got = String::new();
        c.read_to_string(&mut got).unwrap();
        got.lines().next().unwrap_or("").to_string()
    }

    #[test]
    fn arithmetic() {
        assert_eq!(1 + 1, 2);
    }

    #[test]
    fn planted_refusal() {
        match env::var("SBX_PLANT").unwrap_or_default().as_str() {
            "read" => assert!(std::fs::read(env::var("SBX_PLANT_PATH").unwrap()).is_err()),
            "net" => {
                let line = proxy_get(&env::var("SBX_PLANT_URL").unwrap());
                assert!(line.contains(" 403 "), "proxy answered {:?}", line);
            }
            "unshare" => assert_eq!(unsafe { unshare(CLONE_NEWUSER) }, -1),
            _ => {}
        }
    }
}
