// A minimal useChat page (tests/web/test_use_chat.py serves it on partwire's origin):
// ?chat=ID names the chat, ?agent=NAME the agent. It loads the chat's settled messages,
// resumes a turn in progress, and answers tool approvals with the AI SDK's own flow.
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";
import { useState } from "react";
import { createRoot } from "react-dom/client";

const params = new URLSearchParams(location.search);
const chatId = params.get("chat");
const agent = params.get("agent");

function Part({ part, approve }) {
  if (part.type === "text") return <p className="text">{part.text}</p>;
  if (!part.type.startsWith("tool-")) return null;
  return (
    <div className="tool" data-state={part.state}>
      <span className="name">{part.type.slice(5)}</span>
      {part.state === "approval-requested" && (
        <button className="approve" onClick={() => approve(part.approval.id)}>Approve</button>
      )}
      {part.state === "output-available" && <pre className="output">{part.output}</pre>}
    </div>
  );
}

function Chat({ initial }) {
  const [text, setText] = useState("");
  const { messages, sendMessage, status, addToolApprovalResponse } = useChat({
    id: chatId,
    messages: initial,
    resume: true,
    transport: new DefaultChatTransport({ api: "/ui/chat", body: agent ? { agent } : {} }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  window.chatState = { messages, status };
  const approve = (id) => addToolApprovalResponse({ id, approved: true });
  return (
    <main>
      <div id="status">{status}</div>
      {messages.map((message) => (
        <div key={message.id} className={`message ${message.role}`}>
          {message.parts.map((part, n) => <Part key={n} part={part} approve={approve} />)}
        </div>
      ))}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          sendMessage({ text });
          setText("");
        }}
      >
        <input id="prompt" value={text} onChange={(event) => setText(event.target.value)} />
        <button type="submit">Send</button>
      </form>
    </main>
  );
}

const answer = await fetch(`/ui/chat/${encodeURIComponent(chatId)}/messages`);
const initial = answer.ok ? await answer.json() : [];
createRoot(document.getElementById("root")).render(<Chat initial={initial} />);
