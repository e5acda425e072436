#include "cli/gdb_packet.hpp"

#include <catch2/catch.hpp>
#include <random>

using namespace vx::cli::gdb;

namespace {

std::vector<PacketEvent> feed(std::string_view bytes) {
  PacketReader r;
  std::vector<PacketEvent> out;
  r.feed(bytes, &out);
  return out;
}

}  // namespace

TEST_CASE("a framed packet carries its payload and the modulo-256 sum of its bytes as two hex digits") {
  CHECK(frame("OK") == "$OK#9a");
  CHECK(frame("") == "$#00");
  CHECK(frame("qSupported") == "$qSupported#37");
  CHECK(checksum("g") == 0x67);
}

TEST_CASE("a binary reply escapes $, #, } and * as } followed by the byte xor 0x20") {
  CHECK(escape_binary(std::string("a$b#c}d*e")) ==
        "a}\x04"
        "b}\x03"
        "c}]d}\x0a"
        "e");
  CHECK(frame("l}", true) == "$l}]#46");
}

TEST_CASE("a text reply sends runs of four or more equal characters run-length encoded, as gdbserver does") {
  CHECK(encode_runs("abc") == "abc");
  CHECK(encode_runs("000") == "000");          // 2 copies: "0*" would be no shorter
  CHECK(encode_runs("0000") == "0* ");         // 3 copies: ' ' is 3 + 29
  CHECK(encode_runs("00000000") == "0*\"00");  // 7 copies: '$' (7 + 29) and '#' (6) are never counts
  CHECK(encode_runs(std::string(7, 'f')) == "f*\"f");
  CHECK(encode_runs(std::string(98, '0')) == "0*~");  // 97 copies: '~', the largest count
  CHECK(encode_runs(std::string(99, '0')) == "0*~0");
  CHECK(encode_runs(std::string(200, '0')) == "0*~0*~0* ");       // 98 + 98 + 4
  CHECK(encode_runs("$$$$####}}}}****") == "$$$$####}}}}****");   // framing and escapes stay as they are
  CHECK(frame_reply("00000080", false) == frame("0*\"80"));       // six zeros: 5 copies
  CHECK(frame_reply("l0000", true) == frame("l0000", true));      // binary: escaped, never encoded
  CHECK(reply_text("a $ b # c } d * e") == "a ? b ? c ? d ? e");  // an error's text cannot break a frame

  // Every text payload (no '$', '#', '}' or '*': those cannot be sent unescaped) decodes back to
  // itself, and no count is a framing character. Fixed seed.
  std::mt19937 rng(37);
  const std::string alphabet = "0f;: a";
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    const int pieces = int(rng() % 12);
    for (int p = 0; p < pieces; ++p) text.append(size_t(rng() % 230), alphabet[rng() % alphabet.size()]);
    const std::string enc = encode_runs(text);
    std::string error;
    auto dec = decode_payload(enc, &error);
    REQUIRE(dec);
    REQUIRE(*dec == text);
    CHECK(enc.size() <= text.size());
    for (size_t k = 0; k + 1 < enc.size(); ++k)
      if (enc[k] == '*') CHECK((enc[k + 1] != '#' && enc[k + 1] != '$'));
  }
}

TEST_CASE("the reader splits packets, acknowledgements and the interrupt byte in order") {
  auto ev = feed("+$g#67-\x03$?#3f");
  REQUIRE(ev.size() == 5);
  CHECK(ev[0].kind == PacketEvent::Ack);
  CHECK(ev[1].kind == PacketEvent::Packet);
  CHECK(ev[1].payload == "g");
  CHECK(ev[2].kind == PacketEvent::Nack);
  CHECK(ev[3].kind == PacketEvent::Interrupt);
  CHECK(ev[4].payload == "?");
}

TEST_CASE("a packet split across reads is assembled once its checksum arrives") {
  PacketReader r;
  std::vector<PacketEvent> out;
  r.feed("$m8000", &out);
  r.feed("0000,4#", &out);
  CHECK(out.empty());
  r.feed("c", &out);
  CHECK(out.empty());
  r.feed("c", &out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == PacketEvent::BadPacket);  // wrong sum: cc
  out.clear();
  std::string good = frame("m80000000,4");
  r.feed(good, &out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].payload == "m80000000,4");
}

TEST_CASE("a wrong or non-hex checksum is a bad packet and the reader goes on with the next one") {
  auto ev = feed("$g#00$g#zz$g#67");
  REQUIRE(ev.size() == 3);
  CHECK(ev[0].kind == PacketEvent::BadPacket);
  CHECK(ev[0].payload == "a wrong checksum");
  CHECK(ev[1].kind == PacketEvent::BadPacket);
  CHECK(ev[2].kind == PacketEvent::Packet);
}

TEST_CASE("run-length encoding repeats the previous byte (count - 29) more times") {
  std::string error;
  CHECK(decode_payload("0* ", &error) == "0000");         // ' ' = 32: three more
  CHECK(decode_payload("ab*\"c", &error) == "abbbbbbc");  // '"' = 34: five more
  CHECK_FALSE(decode_payload("*!", &error));
  CHECK(error == "a run-length marker (0x2a) with nothing to repeat");
  CHECK_FALSE(decode_payload("a*", &error));
  CHECK_FALSE(decode_payload("a*\x01", &error));
  // Through the reader: the checksum covers the encoded bytes.
  auto ev = feed(frame("X0* "));
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].payload == "X0000");
}

TEST_CASE("escapes in a packet from gdb are undone before parsing") {
  std::string error;
  CHECK(decode_payload("}]}\x03}\x04}\x0a", &error) == "}#$*");
  CHECK_FALSE(decode_payload("ab}", &error));
  CHECK(error == "an escape character (0x7d) ends the packet");
  auto req = parse_request(*decode_payload("X80000000,2:}]}\x04", &error));
  REQUIRE(std::holds_alternative<WriteMemory>(req));
  CHECK(std::get<WriteMemory>(req).addr == 0x80000000u);
  CHECK(std::get<WriteMemory>(req).bytes == "}$");
}

TEST_CASE("requests are parsed into their typed forms") {
  CHECK(std::holds_alternative<HaltReason>(parse_request("?")));
  CHECK(std::holds_alternative<ReadRegisters>(parse_request("g")));
  CHECK(std::get<ReadRegister>(parse_request("p20")).reg == 32);
  auto m = std::get<ReadMemory>(parse_request("mffff0000,20"));
  CHECK(m.addr == 0xffff0000u);
  CHECK(m.len == 32);
  auto h = std::get<SetThread>(parse_request("Hg-1"));
  CHECK(h.op == 'g');
  CHECK(h.thread.id == -1);
  CHECK(std::get<SetThread>(parse_request("Hc1f")).thread.id == 0x1f);
  auto z = std::get<Breakpoint>(parse_request("Z0,80000104,4"));
  CHECK(z.insert);
  CHECK(z.type == 0);
  CHECK(z.addr == 0x80000104u);
  CHECK(z.kind == 4);
  auto w = std::get<Breakpoint>(parse_request("z2,10040,4"));
  CHECK_FALSE(w.insert);
  CHECK(w.type == 2);
  CHECK(std::holds_alternative<ReverseStep>(parse_request("bs")));
  CHECK(std::holds_alternative<ReverseContinue>(parse_request("bc")));
  CHECK(std::get<Monitor>(parse_request("qRcmd,696e666f2063746173")).command == "info ctas");
  auto x = std::get<XferRead>(parse_request("qXfer:features:read:target.xml:0,ffb"));
  CHECK(x.object == "features");
  CHECK(x.annex == "target.xml");
  CHECK(std::get<XferRead>(parse_request("qXfer:exec-file:read::0,fff")).object == "exec-file");
  CHECK(x.length == 0xffb);
  auto q = std::get<QSupported>(parse_request("qSupported:multiprocess+;swbreak+;xmlRegisters=i386"));
  CHECK(q.features == std::vector<std::string>{"multiprocess+", "swbreak+", "xmlRegisters=i386"});
  CHECK(std::holds_alternative<StartNoAck>(parse_request("QStartNoAckMode")));
  CHECK(std::get<ThreadExtraInfo>(parse_request("qThreadExtraInfo,2a")).thread.id == 42);
}

TEST_CASE("register and memory writes carry their bytes in target order") {
  auto p = std::get<WriteRegister>(parse_request("P2a=efbeadde"));
  CHECK(p.reg == 42);
  CHECK(p.bytes == "\xef\xbe\xad\xde");
  auto g = std::get<WriteRegisters>(parse_request("G0000000001000000"));
  CHECK(g.bytes == std::string("\0\0\0\0\x01\0\0\0", 8));
  auto m = std::get<WriteMemory>(parse_request("Mffff0000,3:0a0b0c"));
  CHECK(m.addr == 0xffff0000u);
  CHECK(m.bytes == "\x0a\x0b\x0c");
  // gdb's probe for binary writes: no data.
  auto x = std::get<WriteMemory>(parse_request("X80000000,0:"));
  CHECK(x.addr == 0x80000000u);
  CHECK(x.bytes.empty());
  CHECK(std::holds_alternative<Malformed>(parse_request("P20")));
  CHECK(std::holds_alternative<Malformed>(parse_request("P20=zz")));
  CHECK(std::holds_alternative<Malformed>(parse_request("G123")));
  CHECK(std::holds_alternative<Malformed>(parse_request("X80000000,2:a")));
}

TEST_CASE("vCont names each action and its thread; C and S drop their signal") {
  auto v = std::get<VCont>(parse_request("vCont;s:3;c"));
  REQUIRE(v.actions.size() == 2);
  CHECK(v.actions[0] == VContAction{'s', ThreadRef{3}});
  CHECK(v.actions[1] == VContAction{'c', std::nullopt});
  auto sig = std::get<VCont>(parse_request("vCont;C05:-1"));
  CHECK(sig.actions[0] == VContAction{'c', ThreadRef{-1}});
  CHECK(std::holds_alternative<VContQuery>(parse_request("vCont?")));
  CHECK(std::holds_alternative<Malformed>(parse_request("vCont;x")));
  CHECK(std::holds_alternative<Malformed>(parse_request("vCont;")));
  CHECK(std::holds_alternative<Malformed>(parse_request("vCont;s:zz")));
}

TEST_CASE("malformed arguments are Malformed (an error reply) and unknown packets Unknown (an empty reply)") {
  CHECK(std::holds_alternative<Malformed>(parse_request("m80000000")));
  CHECK(std::holds_alternative<Malformed>(parse_request("m,4")));
  CHECK(std::holds_alternative<Malformed>(parse_request("m1ffffffff,4")));
  CHECK(std::holds_alternative<Malformed>(parse_request("pxyz")));
  CHECK(std::holds_alternative<Malformed>(parse_request("M0,2:abc")));
  CHECK(std::holds_alternative<Malformed>(parse_request("M0,2:abcdef")));
  CHECK(std::holds_alternative<Malformed>(parse_request("Hx1")));
  CHECK(std::holds_alternative<Malformed>(parse_request("qRcmd,6")));
  CHECK(std::holds_alternative<Malformed>(parse_request("Z0,80000000")));
  CHECK(std::holds_alternative<Malformed>(parse_request("Z0")));
  CHECK(std::holds_alternative<Unknown>(parse_request("qTStatus")));
  CHECK(std::holds_alternative<Unknown>(parse_request("vMustReplyEmpty")));
  CHECK(std::holds_alternative<Unknown>(parse_request("Z9,0,0")));
  CHECK(std::holds_alternative<Unknown>(parse_request("")));
}

TEST_CASE("registers go out as little-endian hex and hex comes back as bytes") {
  CHECK(hex_u32_le(0x80000104u) == "04010080");
  CHECK(to_hex(std::string("\x00\xff", 2)) == "00ff");
  CHECK(from_hex("00ff") == std::string("\x00\xff", 2));
  CHECK_FALSE(from_hex("0"));
  CHECK_FALSE(from_hex("0g"));
}

TEST_CASE("a packet longer than the limit is dropped as a bad packet") {
  PacketReader r;
  std::vector<PacketEvent> out;
  std::string big(PacketReader::kMaxPacket + 10, 'a');
  r.feed(frame(big), &out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == PacketEvent::BadPacket);
}
