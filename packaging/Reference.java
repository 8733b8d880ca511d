import java.util.ArrayDeque;
import java.util.Deque;
import picocli.CommandLine;

/**
 * Prints the usage help of every levee command, depth first, each after a line {@code ==> levee COMMAND}: the
 * source of the package's man page and command reference (scripts/package runs it with the JDK's source launcher
 * on levee-cli's class path, one JVM for all the commands). The built-in {@code help} command is left out.
 */
public final class Reference {
    public static void main(String[] args) throws Exception {
        Class<?> main = Class.forName("dev.levee.cli.Main");
        Deque<CommandLine> todo = new ArrayDeque<>();
        todo.push(new CommandLine(main));
        while (!todo.isEmpty()) {
            CommandLine cl = todo.pop();
            System.out.println("==> " + cl.getCommandSpec().qualifiedName());
            System.out.print(cl.getUsageMessage(CommandLine.Help.Ansi.OFF));
            var subs = new java.util.ArrayList<>(cl.getSubcommands().values().stream().distinct()
                    .filter(s -> !s.getCommandSpec().usageMessage().hidden())
                    .filter(s -> !(s.getCommand() instanceof CommandLine.HelpCommand)).toList());
            java.util.Collections.reverse(subs);
            subs.forEach(todo::push);
        }
    }
}
