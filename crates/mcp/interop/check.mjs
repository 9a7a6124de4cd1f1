// The checks every client makes through the proxy in front of server-everything, whatever its
// SDK and era: only the contracted tool is listed, described by its contract; a call is answered
// with the projection (the fields promised, nothing else); a reading the contract refuses
// (Los Angeles: "73" degrees Celsius) is the fixed failure; a tool without a contract is refused;
// no text the server wrote reaches the client.

export const SERVER_WORDS = [
  "Returns structured content along with an output schema", // the tool's own description
  "Get Structured Content Tool", // its title
  "Choose city", // its input schema's description
  "Cloudy", // the `conditions` the contract does not promise
];

export async function exercise(label, { listTools, callTool }) {
  const failures = [];
  const seen = [];
  const expect = (condition, what) => {
    if (!condition) failures.push(what);
  };
  const listed = await listTools();
  seen.push(JSON.stringify(listed));
  const names = listed.tools.map((tool) => tool.name);
  expect(
    names.length === 1 && names[0] === "get-structured-content",
    `lists only the contracted tool, got ${JSON.stringify(names)}`,
  );
  const admitted = await callTool("get-structured-content", { location: "New York" });
  seen.push(JSON.stringify(admitted));
  const data = admitted.structuredContent?.data;
  expect(
    admitted.isError !== true && data?.temperature === 33 && data?.humidity === 82 && !("conditions" in (data ?? {})),
    `New York is admitted as the projection, got ${JSON.stringify(admitted)}`,
  );
  const refused = await callTool("get-structured-content", { location: "Los Angeles" });
  seen.push(JSON.stringify(refused));
  expect(
    refused.isError === true && refused.structuredContent?.error?.code === "INVALID_RESPONSE",
    `Los Angeles (73 °C) is refused, got ${JSON.stringify(refused)}`,
  );
  let echoRefused = false;
  try {
    const echoed = await callTool("echo", { message: "hello" });
    seen.push(JSON.stringify(echoed));
    echoRefused = echoed.isError === true;
  } catch (error) {
    echoRefused = true;
    seen.push(String(error?.message ?? error));
  }
  expect(echoRefused, "a tool without a contract is refused");
  for (const words of SERVER_WORDS) {
    expect(!seen.some((text) => text.includes(words)), `the server's words reached the client: ${words}`);
  }
  if (failures.length > 0) {
    console.error(`FAIL ${label}:\n  ${failures.join("\n  ")}`);
    return false;
  }
  console.log(`ok   ${label}`);
  return true;
}

// Observe mode (`--mode observe`), the first days in front of a server nobody has contracted
// yet: the client is served the server's own listing (every tool, its own descriptions and
// schemas), so it accepts every result passed on unchanged, the ones the contract refuses too,
// and a tool without a contract is called as the server serves it.
export async function exerciseObserved(label, { listTools, callTool }) {
  const failures = [];
  const expect = (condition, what) => {
    if (!condition) failures.push(what);
  };
  try {
    const listed = await listTools();
    const names = listed.tools.map((tool) => tool.name);
    expect(
      names.includes("echo") && names.includes("get-structured-content") && names.length > 2,
      `lists every tool the server lists, got ${JSON.stringify(names)}`,
    );
    const own = listed.tools.find((tool) => tool.name === "get-structured-content");
    expect(
      own?.description?.includes(SERVER_WORDS[0]) && own?.outputSchema !== undefined,
      `the server's own description and output schema, got ${JSON.stringify(own)}`,
    );
    const refused = await callTool("get-structured-content", { location: "Los Angeles" });
    expect(
      refused.isError !== true && refused.structuredContent?.temperature === 73,
      `Los Angeles passes unchanged, got ${JSON.stringify(refused)}`,
    );
    const echoed = await callTool("echo", { message: "hello" });
    expect(
      echoed.isError !== true && echoed.content?.[0]?.text === "Echo: hello",
      `a tool without a contract is called as the server serves it, got ${JSON.stringify(echoed)}`,
    );
  } catch (error) {
    failures.push(`the client refused what the proxy passed: ${error?.stack ?? error}`);
  }
  if (failures.length > 0) {
    console.error(`FAIL ${label}:\n  ${failures.join("\n  ")}`);
    return false;
  }
  console.log(`ok   ${label}`);
  return true;
}
