/**
 * URLs of internal addresses in the forms an attacker would try: loopback, private, link-local, cloud metadata,
 * CGNAT, IPv6 unique-local and link-local, IPv4-mapped IPv6 in both notations, and IPv4 written in decimal, octal,
 * hex and short forms (which the URL parser turns into the dotted address, e.g. 2130706433 is 127.0.0.1).
 */
export const INTERNAL_URLS = [
  'https://127.0.0.1/', 'https://10.0.0.1/', 'https://172.16.0.1/', 'https://192.168.1.1/', 'https://0.0.0.0/',
  'https://169.254.169.254/latest/meta-data/', 'https://100.64.0.1/', 'https://100.127.255.254/',
  'https://[::1]/', 'https://[::]/', 'https://[fd00::1]/', 'https://[fc00::1]/', 'https://[fe80::1]/',
  'https://[::ffff:127.0.0.1]/', 'https://[::ffff:7f00:1]/', 'https://[::ffff:169.254.169.254]/', 'https://[::ffff:a9fe:a9fe]/',
  'https://2130706433/', 'https://0x7f.1/', 'https://0177.0.0.1/', 'https://0x7f000001/', 'https://017700000001/', 'https://127.1/',
  'https://0/', 'https://2852039166/', 'https://0xa9.0xfe.0xa9.0xfe/', 'https://0251.0376.0251.0376/', 'https://10.1/', 'https://0xc0.0xa8.1.1/',
];
